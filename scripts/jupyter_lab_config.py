"""Jupyter server settings for ``make lab`` (passed with ``--config``; a traitlets config file).

Notebook outputs never reach git: ``scripts/setup.sh`` makes nbstripout this checkout's git clean filter for
``*.ipynb`` (``.gitattributes``). One gap remains that the filter cannot close: git reports a tracked file
whose *size* changed as modified without running the filter (``git status`` says ``M`` while ``git diff``
shows nothing), and a notebook saved with its outputs always changes size. So after Lab saves a tracked
notebook, :func:`refresh_git_stat` asks git whether anything but outputs changed (``git diff --quiet``, which
runs the filter) and, when nothing did, runs ``git add`` on it: a no-op for its content (the cleaned notebook
equals the index) that refreshes git's record of the file's size and time. A real edit is left alone and
shows in ``git status`` as usual; what is staged is never changed.
"""
import subprocess
from pathlib import Path


def refresh_git_stat(model, os_path, contents_manager, **kwargs):
    """post_save_hook: after a save that changed only outputs, refresh the notebook's stat in git's index."""
    path = Path(os_path)
    if path.suffix != ".ipynb":
        return
    git = ["git", "-C", str(path.parent)]
    try:
        if subprocess.run(git + ["ls-files", "--error-unmatch", "--", path.name], capture_output=True,
                          timeout=30).returncode != 0:
            return  # not tracked (a new notebook, or not a git checkout): nothing to refresh
        if subprocess.run(git + ["diff", "--quiet", "--", path.name], capture_output=True, timeout=60).returncode == 0:
            subprocess.run(git + ["add", "--", path.name], capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:  # a busy index.lock: git status shows M until next save
        contents_manager.log.warning("geolip: could not refresh git's index for %s: %s", path, exc)


def _contents_manager_class():
    """The server's default contents manager with :func:`refresh_git_stat` registered as a post-save hook.

    Not ``c.FileContentsManager.post_save_hook``: the server applies this file twice (as the server's and
    as the Lab extension's config), and setting that trait a second time warns ``Overriding existing
    post_save_hook`` once per load; a hook registered when the manager is built is registered once."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

    class GitRefreshingContentsManager(AsyncLargeFileManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.register_post_save_hook(refresh_git_stat)

    return GitRefreshingContentsManager


c = get_config()  # noqa: F821 - defined by traitlets when it loads this file
c.ServerApp.contents_manager_class = _contents_manager_class()
# GPU boxes are often offline, and nothing should be fetched behind the user's back: the server fetches no news
# feed (it answers an empty one, whatever the user replies to Lab's "get notified about news?" prompt) and does
# not check for a newer JupyterLab
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
