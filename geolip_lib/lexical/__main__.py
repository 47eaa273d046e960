"""``python -m geolip_lib.lexical``: build (or check) the cached WordNet lexicon arrays."""
import time

from .wordnet import cache_dir, load_lexicon

t0 = time.time()
lx = load_lexicon()
print(f"WordNet lexicon: {len(lx)} synsets, {len(lx.anc_ids)} ancestor entries "
      f"({time.time() - t0:.1f} s) in {cache_dir()}")
