"""``python -m geolip_lib.lexical``: build (or check) the cached WordNet lexicon arrays."""
import time

from .wordnet import cache_dir, load_lexicon

t0 = time.time()
lx = load_lexicon()
print(f"WordNet lexicon: {len(lx)} synsets, {len(lx.anc_ids)} ancestor entries "
      f"({time.time() - t0:.1f} s) in {cache_dir()}")

from ..probes.contextual import wordnet_examples  # noqa: E402 - notebook 16's contexts, cached beside the lexicon

t0 = time.time()
ex = wordnet_examples()
print(f"WordNet example sentences: {len(ex)} words, {sum(len(v) >= 5 for v in ex.values())} with at least 5 "
      f"({time.time() - t0:.1f} s)")
