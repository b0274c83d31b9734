"""Configuration: one frozen value, resolved once.

Precedence, highest first: explicit arguments (CLI flags) > `VAULT_MEMORY_*` environment
variables > the vault's own `.vault-memory.toml` > the user config file
(`~/.config/vault-memory/config.toml`, or `VAULT_MEMORY_CONFIG`) > defaults. A vault file may
not set where the index or credentials go (`_NOT_FROM_VAULT`), nor raise a limit (`LIMITS`).

Every value is checked where it enters (`check_setting`): numbers must be finite and inside
the range `RANGES` gives (a NaN half-life made recall return nothing; `dormant_below = 2` hid
every note), whole numbers must be whole, and choices one of `CHOICES`; the message names the
key, the value and where it came from (the flag, the variable, the file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

VAULT_CONFIG_NAME = ".vault-memory.toml"
IGNORE_FILE_NAME = ".vaultmemoryignore"
DEFAULT_MAX_NOTE_BYTES = 16 * 1024 * 1024  # max_note_bytes: a bigger file is never read


@dataclass(frozen=True)
class Config:
    """Everything vault-memory needs to know, resolved once."""

    vault: Path
    index_dir: Path | None = None  # None -> per-vault folder in the user cache dir
    embedder: str = "minilm"
    ollama_host: str | None = None
    embed_timeout: float = 30.0
    chroma_url: str | None = None
    # dense search over the catalog's vectors up to this many chunks (docs/how-it-works.md)
    exact_search_limit: int = 150_000
    # embed every answer sentence with the index, so a new question embeds only itself (search/sentences.py)
    index_sentences: bool = True
    lexical_fallback: bool = False  # serve BM25-only recall when the vector store is unreachable
    read_only: bool = False  # never write to the vault (no node_ids, no rehearsal)
    ignore: tuple[str, ...] = ()
    # Decay model (see decay.py and docs/memory-model.md).
    half_life_short_days: float = 7.0
    half_life_long_days: float = 60.0
    dormant_below: float = 0.1
    # Which recalled notes count as used (rehearsed, i.e. written back): docs/memory-model.md, "Rehearsal".
    rehearse: str = "all"  # all | memories (notes in memory_folder) | none
    # Agent write path.
    memory_folder: str = "Memory"
    staging_folder: str = "Memory/Staged"
    episodes_folder: str = "Memory/Episodes"
    staged_ttl_days: float = 7.0
    autolink: bool = True  # link the notes a memory (or a log entry) names by title or alias (linking.py)
    log_to_daily_note: bool = False  # `log` appends to today's daily note (Obsidian's settings) instead
    log_heading: str = "Log"  # ... under this heading (created at the end of the note if missing)
    # The review note (review.py): "" turns it off.
    review_note: str = "Memory/Review.md"
    review_window_days: float = 7.0  # "recently" and "soon" in the review note
    # Prefetch.
    prefetch_budget: int = 1200
    prefetch_entry_cap: int = 400
    # Obsidian: read .obsidian/ for template folders, excluded files and the daily-notes format.
    obsidian_settings: bool = True
    # Watcher.
    debounce_seconds: float = 0.3
    quiet_seconds: float = 5.0
    # A file bigger than this is never read (checked by stat before it is opened): skipped with one warning.
    max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Config(vault="~/notes") built in code: a folder given as text is a path, as on the command line.
        for name in ("vault", "index_dir"):
            value = getattr(self, name)
            if isinstance(value, (str, os.PathLike)) and not isinstance(value, Path):
                if not str(value).strip():
                    raise ConfigError(f"{name} is empty: give the folder's path")
                object.__setattr__(self, name, Path(value).expanduser())
            elif (value is not None or name == "vault") and not isinstance(value, Path):
                raise ConfigError(f"{name} = {value!r}: must be a folder's path (text or pathlib.Path)")
        # Resolution checks each value naming its source first; this catches Config(...) built in code.
        for f in dataclasses.fields(self):
            problem = check_setting(f.name, getattr(self, f.name))
            if problem is not None:
                raise ConfigError(f"{f.name} = {getattr(self, f.name)!r}: {problem}")

    @property
    def resolved_index_dir(self) -> Path:
        """The index folder: explicit, or one per vault in the user cache dir."""
        if self.index_dir is not None:
            return self.index_dir
        return default_index_dir(self.vault)


def default_index_dir(vault: Path) -> Path:
    """Outside the vault (vaults are often synced; an index must have one writer)."""
    from platformdirs import user_cache_path

    absolute = str(vault.expanduser().resolve())
    digest = hashlib.sha1(absolute.encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", vault.resolve().name).strip("-") or "vault"
    return user_cache_path("vault-memory") / f"{slug}-{digest}"


_FIELDS = {f.name: f for f in dataclasses.fields(Config)}

# Allowed ranges of the numeric settings: (low, high, low included). High is always included.
# Cosines live in [-1, 1]; strengths in [0, 1]; times must be positive where zero means nonsense.
RANGES: dict[str, tuple[float, float, bool]] = {
    "embed_timeout": (0.0, 86_400.0, False),
    "exact_search_limit": (0, 1_000_000_000, True),
    "half_life_short_days": (0.0, 36_500.0, False),
    "half_life_long_days": (0.0, 36_500.0, False),
    "dormant_below": (0.0, 1.0, True),
    "staged_ttl_days": (0.0, 36_500.0, False),
    "prefetch_budget": (0, 1_000_000, True),
    "review_window_days": (0.0, 36_500.0, False),
    "prefetch_entry_cap": (1, 1_000_000, True),
    "debounce_seconds": (0.0, 60.0, True),
    "quiet_seconds": (0.0, 86_400.0, True),
    "max_note_bytes": (1024, 1 << 30, True),
}
CHOICES: dict[str, tuple[str, ...]] = {"rehearse": ("all", "memories", "none")}


def check_setting(name: str, value: Any) -> str | None:
    """What is wrong with this value for setting `name` (None: nothing). Numbers must be finite
    and in `RANGES`; settings without a listed range only need to be finite."""
    if name in CHOICES and value not in CHOICES[name]:
        return f"must be one of {', '.join(CHOICES[name])}"
    f = _FIELDS.get(name)
    kind = type(f.default) if f is not None else None
    if kind not in (int, float) or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "must be a number"
    if not math.isfinite(value):
        return "must be a finite number"
    if kind is int and value != int(value):
        return "must be a whole number"
    if name in RANGES:
        low, high, low_in = RANGES[name]
        if value > high or value < low or (value == low and not low_in):
            return f"must be {'at least' if low_in else 'more than'} {low:g} and at most {high:g}"
    return None


# Settings that no longer do anything: accepted (with a warning) so an old config file still loads.
_CALIBRATED = "a number on the embedder's cosine scale: it lives in its calibration record (`vault-memory calibrate`)"
_ONE_BAR = "a dormant note comes back on a clear match: the calibration's strong bar (docs/ranking.md)"
_RETIRED = {
    "assign_ids": "node_ids are written only when there is state to keep (docs/memory-model.md, identity)",
    "reactivate_similarity": _ONE_BAR,
    "reactivate_slope": _ONE_BAR,
    "reactivate_cap": _CALIBRATED,
    "rehearse_min_similarity": _CALIBRATED,
    "rehearse_max_hits": "recall rehearses the one hit that clearly answers (docs/memory-model.md)",
    "rehearsal_coalesce_seconds": "recalls within 10 minutes of a note's last rehearsal write nothing more",
    "conflict_similarity": _CALIBRATED,
    "prefetch_min_score": _CALIBRATED,
    "prefetch_staged_similarity": _CALIBRATED,
    "promote_after_days": "a short memory stays short (bench lifetime: promotion kept replaced facts alive)",
}
_NOT_FROM_VAULT = frozenset({"vault", "index_dir", "chroma_url", "ollama_host"})
# Settings that bound what a run may spend (memory per note, vectors held for exact search, the
# block handed to a model each turn, how long a call may hang): a vault file may lower them, never
# raise them above the user's (their file, or the default). A vault may come from elsewhere, and a
# 1 GB `max_note_bytes` in one let a sparse 1 GB file take 1.07 GB of memory (issue 41).
LIMITS = frozenset({"max_note_bytes", "exact_search_limit", "prefetch_budget", "prefetch_entry_cap", "embed_timeout"})
_ENV_PREFIX = "VAULT_MEMORY_"


def _coerce(name: str, value: Any, source: str) -> Any:
    """Turn a string or TOML value into the field's type, or say what is wrong."""
    default = _FIELDS[name].default
    try:
        if name in ("vault", "index_dir"):
            return Path(str(value)).expanduser()
        if name == "ignore":
            if isinstance(value, str):
                return tuple(p.strip() for p in value.split(",") if p.strip())
            return tuple(str(p) for p in value)
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if isinstance(default, (int, float)) and isinstance(value, bool):
            raise ValueError("expected a number, not true/false")
        if isinstance(default, int):
            number = (
                float(value) if isinstance(value, float) or (isinstance(value, str) and "." in value) else int(value)
            )
            if isinstance(number, float) and not number.is_integer():
                raise ValueError("expected a whole number")
            return int(number)
        if isinstance(default, float):
            return float(value)
        return None if value is None else str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: invalid value {value!r} for {name} ({exc}); fix or remove it") from exc


def _load_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only when there is a config file

    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from exc
    # Accept both a flat file and a [vault-memory] table.
    table = dict(data.get("vault-memory", data))
    for key in sorted(set(table) & set(_RETIRED)):
        value = table.pop(key)
        if value or key != "assign_ids":  # `assign_ids = false` said what is now always true
            logging.getLogger(__name__).warning(
                "%s: %s is no longer a setting (%s); remove it", path, key, _RETIRED[key]
            )
    unknown = sorted(set(table) - set(_FIELDS) - {"vault-memory"})
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(_FIELDS))}")
    return {k: _coerce(k, v, str(path)) for k, v in table.items() if k in _FIELDS}


def user_config_path(env: Mapping[str, str]) -> Path:
    if env.get("VAULT_MEMORY_CONFIG"):
        return Path(env["VAULT_MEMORY_CONFIG"]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "vault-memory" / "config.toml"


@dataclass(frozen=True)
class Source:
    """Where one setting's value came from: `kind` is one of SOURCE_KINDS, `where` names the flag's
    setting, the environment variable or the file."""

    kind: str
    where: str = ""

    def __str__(self) -> str:
        return f"{self.kind} ({self.where})" if self.where else self.kind


# Highest precedence first. "flag" is any explicit override: a CLI flag or a keyword to Memory(...);
# "derived" is a value another setting forces.
SOURCE_KINDS = ("derived", "flag", "env", "vault file", "user file", "default")


def resolve_config(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Resolve flags > environment > vault config file > user config file > defaults."""
    return resolve_config_sources(overrides, env)[0]


def resolve_config_sources(
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> tuple[Config, dict[str, Source]]:
    """`resolve_config`, plus where each field's value came from (every field of Config but `extra`)."""
    env = os.environ if env is None else env
    explicit = {k: v for k, v in (overrides or {}).items() if v is not None}
    for key in sorted(set(explicit) & set(_RETIRED)):  # an old caller's keyword: said, then dropped
        if explicit.pop(key) or key != "assign_ids":
            logging.getLogger(__name__).warning("%s is no longer a setting (%s)", key, _RETIRED[key])
    for key in explicit:
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {key!r}")

    from_env: dict[str, Any] = {}
    for name in sorted(set(_RETIRED) - set(_FIELDS)):
        if env.get(_ENV_PREFIX + name.upper()):
            logging.getLogger(__name__).warning(
                "%s is no longer a setting (%s); unset it", _ENV_PREFIX + name.upper(), _RETIRED[name]
            )
    for name in _FIELDS:
        raw = env.get(_ENV_PREFIX + name.upper())
        if raw not in (None, ""):
            from_env[name] = _coerce(name, raw, _ENV_PREFIX + name.upper())

    user_file = user_config_path(env)
    from_user = _load_toml(user_file) if user_file.is_file() else {}

    given = (overrides or {}).get("vault")
    if isinstance(given, str) and not given.strip():
        # `--vault "$VAULT"` with VAULT unset: never the current folder (it indexed a clone's docs)
        raise ConfigError("--vault is empty (an unset shell variable?); pass --vault PATH or set VAULT_MEMORY_VAULT")
    vault_value = explicit.get("vault") or from_env.get("vault") or from_user.get("vault")
    if vault_value is None:
        raise ConfigError("no vault given; pass --vault PATH or set VAULT_MEMORY_VAULT")
    vault = Path(vault_value).expanduser()
    vault_file = vault / VAULT_CONFIG_NAME
    from_vault = _load_toml(vault_file) if vault_file.is_file() else {}
    # A vault may be shared or synced from elsewhere: it must not point our credentials or
    # our index at a place of its choosing.
    for key in sorted(set(from_vault) & _NOT_FROM_VAULT):
        logging.getLogger(__name__).warning(
            "%s: ignoring %s (set it with a flag, the environment or %s)", vault_file, key, user_file
        )
        from_vault.pop(key)
    for key in sorted(set(from_vault) & LIMITS):
        mine = from_user.get(key, _FIELDS[key].default)
        if from_vault[key] > mine:
            logging.getLogger(__name__).warning(
                "%s: ignoring %s = %s, above your %s (a vault may lower a limit, not raise it); to raise it, "
                "set it in %s, the environment (%s) or a flag",
                vault_file,
                key,
                from_vault[key],
                mine,
                user_file,
                _ENV_PREFIX + key.upper(),
            )
            from_vault.pop(key)

    sources = {name: Source("default") for name in _FIELDS if name != "extra"}
    merged: dict[str, Any] = {}
    layers: list[tuple[dict[str, Any], Callable[[str], Source]]] = [
        (from_user, lambda _: Source("user file", str(user_file))),
        (from_vault, lambda _: Source("vault file", str(vault_file))),
        (from_env, lambda name: Source("env", _ENV_PREFIX + name.upper())),
        (explicit, lambda name: Source("flag", name)),
    ]
    for layer, source in layers:
        merged.update(layer)
        sources.update({name: source(name) for name in layer})
    merged["vault"] = vault
    typed = (Path, tuple, bool, int, float)
    values = {
        k: (_coerce(k, v, "argument") if k in explicit and not isinstance(v, typed) else v) for k, v in merged.items()
    }
    problems = [
        f"{k} = {v!r} from {sources[k]}: {why}"
        for k, v in values.items()
        if k in sources and (why := check_setting(k, v)) is not None
    ]
    if problems:
        raise ConfigError("; ".join(problems) + "; fix or remove " + ("it" if len(problems) == 1 else "them"))
    return Config(**values), sources
