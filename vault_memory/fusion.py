"""Fusing lexical and dense candidate lists into one relevance score (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

Ranked = Sequence[tuple[str, float]]  # (key, score), best first


def best_per_group(ranked: Ranked, group_of: Mapping[str, str]) -> list[tuple[str, float, str]]:
    """Collapse chunk hits to groups (notes): (group, best score, best chunk), best first."""
    best: dict[str, tuple[float, str]] = {}
    for key, score in ranked:
        group = group_of.get(key)
        if group is None:
            continue
        if group not in best or score > best[group][0]:
            best[group] = (score, key)
    return sorted(((g, s, c) for g, (s, c) in best.items()), key=lambda t: (-t[1], t[0]))


def rrf(lists: Iterable[Sequence[str]], k: float = 60.0, weights: Sequence[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: sum of w / (k + rank)."""
    out: dict[str, float] = {}
    for i, keys in enumerate(lists):
        w = 1.0 if weights is None else weights[i]
        for rank, key in enumerate(keys, start=1):
            out[key] = out.get(key, 0.0) + w / (k + rank)
    return out


def normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """Min-max to [0, 1] over the candidates (a single candidate gets 1)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo < 1e-12:
        return {k: 1.0 for k in scores}
    return {k: (v - lo) / (hi - lo) for k, v in scores.items()}


def convex(lexical: Mapping[str, float], dense: Mapping[str, float], alpha: float = 0.5,
           prenormalised_lexical: bool = False) -> dict[str, float]:
    """alpha * dense + (1 - alpha) * lexical on min-max normalised scores; missing counts as 0."""
    lx = dict(lexical) if prenormalised_lexical else normalise(lexical)
    dn = normalise(dense)
    keys = set(lx) | set(dn)
    return {k: alpha * dn.get(k, 0.0) + (1 - alpha) * lx.get(k, 0.0) for k in keys}
