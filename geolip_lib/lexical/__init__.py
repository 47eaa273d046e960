"""WordNet access, an exact and fast path / Wu–Palmer similarity engine, lemma→token matching.

>>> from geolip_lib import lexical
>>> lx = lexical.load_lexicon()                       # cached WordNet 3.0 arrays
>>> lexical.wup_similarity_pairs(["dog.n.01"], ["cat.n.01"])   # == NLTK, as float64
>>> lexical.similarity_matrix(synsets, "wup")         # (n, n)
"""
from .engine import (  # noqa: F401
    SimilarityEngine,
    get_engine,
    path_similarity_pairs,
    similarity_matrix,
    wup_similarity_pairs,
)
from .wordnet import Lexicon, get_wordnet, load_lexicon  # noqa: F401
from .matching import Matched, match_lemmas, single_token_ids  # noqa: F401
from .representations import (  # noqa: F401
    definition_representations,
    encode_texts,
    pool_hidden,
    prompt_for,
    static_representations,
)
from . import relational_battery  # noqa: F401,E402  (the §2/§3 battery used by notebooks 04 and 05)
