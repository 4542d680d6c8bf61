"""Who is asking and what they may see: principals, trust-gated stores (seed 002), category
allowlists (seed 001 §5); one service layer for every door (the rules: docs/memory-api.md,
"Who may do what").

An agent with no allowlist entry sees every category when its trust is `full` (the owner's own
tools: loopback, the CLI, a plain full token) and none otherwise: lower trust fails closed, and
startup logs a warning naming the token so the operator can add the missing allowlist.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from lobug import errors
from lobug.config import TRUST_LEVELS, ApiConfig, Config, ConfigError, TokenConfig, load_config

log = logging.getLogger(__name__)

Via = Literal["token", "loopback", "cli"]
STORES = ("private", "shared", "social")
STORES_BY_TRUST: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "full": ("private", "shared", "social"),
        "inner": ("shared", "social"),
        "familiar": ("social",),
        "public": (),
    }
)
# A stranger: a device without the token, an unknown Wyoming peer, a `public` token. Reads no
# store, and its turns have their own disk allowance and retention (docs/security.md).
STRANGER = "public"
# The owner's trust: the household's activity (/metrics, /v1/stats operations) is its alone.
OWNER_TRUST = "full"
DEFAULT_STORE_BY_TRUST: Mapping[str, str] = MappingProxyType(
    {"full": "private", "inner": "shared", "familiar": "social", "public": "social"}
)
OWNER_STORE = DEFAULT_STORE_BY_TRUST["full"]  # only the owner's words are written there
LOCAL_AGENT = "local"  # loopback clients without a token
CLI_AGENT = "cli"
MCP_AGENT = "mcp"  # `lobug mcp` over stdio
CONTEXT_MODES = ("all", "rag", "none")  # "none": only on explicit request (seed 001 §12)
UNCATEGORIZED = "general"
WILDCARD = "*"
# Whose a conversation is (issue 38, `conversation.resolve_session`): the household's owner
# (loopback, the CLI, the device token), one bearer token, one paired device, one stranger.
OWNER = "owner"
MAX_REQUESTED_CATEGORIES = 64
MAX_CATEGORY_CHARS = 64
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Principal:
    """The caller of one operation: an agent with a trust level, and how it got in."""

    agent: str
    trust: str
    token_name: str | None = None
    via: Via = "token"
    token_id: str | None = None  # which token, without it (`token_identity`)

    def __post_init__(self) -> None:
        if self.trust not in TRUST_LEVELS:
            raise ValueError(f"unknown trust level {self.trust!r}")

    @property
    def stores(self) -> tuple[str, ...]:
        return visible_stores(self)

    @property
    def owner(self) -> str:
        """Whose the conversations it opens are: each token its own, whatever its trust or
        name (two tokens of one trust never share one); loopback and the CLI are the owner."""
        if self.via != "token":
            return OWNER
        return f"token:{self.token_id or 'agent-' + self.agent}"

    def describe(self) -> str:
        """For messages and logs; never holds the token."""
        who = f"agent '{self.agent}' (trust {self.trust}"
        return who + (f", token '{self.token_name}')" if self.token_name else f", via {self.via})")


def loopback_principal() -> Principal:
    return Principal(LOCAL_AGENT, "full", None, "loopback")


def cli_principal(agent: str = CLI_AGENT) -> Principal:
    return Principal(agent, "full", None, "cli")


# -- stores (seed 002 trust gating) ------------------------------------------------------------
def visible_stores(principal: Principal) -> tuple[str, ...]:
    return STORES_BY_TRUST[principal.trust]


def trust_of(stores: Iterable[str]) -> str:
    """The trust of a caller known by the stores it may read (what the doors hand a chat turn):
    the highest level (TRUST_LEVELS, most trusted first) whose stores are all among them; all
    of STORES is the owner ("full"), none is "public"."""
    given = set(stores)
    return next(t for t in TRUST_LEVELS if set(STORES_BY_TRUST[t]) <= given)


def trust_rank(trust: str) -> int:
    """A trust level as a number, higher for more trusted (the owner's "full" highest): a
    turn's model call cuts off those of lower rank (lobug.llm.lane.LLMLane.hold)."""
    return len(TRUST_LEVELS) - TRUST_LEVELS.index(trust)


def turn_store(trust: str) -> str | None:
    """Where what a caller of `trust` says in a chat turn is remembered (issue 25): its default
    store when its trust may write there, never a store above it; None when it may write none
    (public: its words are logged, no fact is kept)."""
    store = DEFAULT_STORE_BY_TRUST[trust]
    return store if store in STORES_BY_TRUST[trust] else None


def can_read_store(principal: Principal, store: str) -> bool:
    return store in STORES_BY_TRUST[principal.trust]


def default_store(principal: Principal) -> str:
    return DEFAULT_STORE_BY_TRUST[principal.trust]


def check_store_name(store: Any) -> str:
    if store not in STORES:
        raise errors.invalid_request(
            f"'store' must be one of {', '.join(STORES)}, got {store!r}", field="store"
        )
    return str(store)


def check_write_store(principal: Principal, store: str | None = None) -> str:
    """The store a write goes to (the trust's default when None); 403 when it is not visible."""
    target = default_store(principal) if store is None else check_store_name(store)
    if not can_read_store(principal, target):
        writable = ", ".join(visible_stores(principal)) or "none"
        raise errors.ApiError(
            403,
            "forbidden",
            f"trust '{principal.trust}' may not write to the '{target}' store "
            f"(writable: {writable})",
            details={"store": target, "trust": principal.trust},
        )
    return target


# -- tokens ------------------------------------------------------------------------------------
def _digest(secret: str) -> bytes:
    # Comparing fixed-length digests keeps the comparison constant-time in the token length too.
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def secret_matches(presented: str | None, expected: str) -> bool:
    """Constant-time comparison of one presented secret (e.g. the device token)."""
    return hmac.compare_digest(_digest(presented or ""), _digest(expected)) and bool(presented)


def token_identity(secret: str) -> str:
    """A token's lasting name for what it owns (its conversations): a salted digest, so the
    database never holds anything that could be presented as the token."""
    salted = hashlib.sha256(b"lobug token identity\0" + secret.encode("utf-8", "surrogatepass"))
    return salted.hexdigest()[:16]


def peer_owner(address: str | None) -> str:
    """Whose the conversations of a caller known only by its address are (a stranger's)."""
    return f"peer:{address or 'unknown'}"


def is_loopback(remote: str | None) -> bool:
    """127.0.0.0/8, ::1 and IPv4-mapped loopback; a Unix socket or garbage is not loopback."""
    if not remote:
        return False
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def load_config_checked(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """`load_config`, then the categories file: a bad one fails at startup (CLI and `serve`)
    with a ConfigError naming the file and key. Here, not in config: config imports no lobug."""
    config = load_config(path, env, overrides)
    CategoryPolicy.load(config.api.categories_file)
    return config


class AccessControl:
    """The configured tokens and category policy of one daemon, shared by HTTP and CLI."""

    def __init__(
        self,
        tokens: Iterable[TokenConfig] = (),
        policy: CategoryPolicy | None = None,
        *,
        allow_loopback: bool = True,
    ) -> None:
        self._tokens = [(_digest(t.token), t) for t in tokens]
        self.policy = policy or CategoryPolicy.default()
        self.allow_loopback = allow_loopback

    @classmethod
    def from_config(cls, api: ApiConfig) -> AccessControl:
        access = cls(
            api.tokens, CategoryPolicy.load(api.categories_file), allow_loopback=api.allow_loopback
        )
        for index, entry in enumerate(api.tokens):
            if entry.trust != "full" and entry.agent not in access.policy.allowlists:
                log.warning(
                    "token %s (agent %r, trust %s) has no category allowlist; it will see no "
                    "memories until one is added to the categories file",
                    entry.name or f"#{index}",
                    entry.agent,
                    entry.trust,
                )
        return access

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal of a bearer token, or None. Every token is compared, match or not."""
        if not presented:
            return None
        digest = _digest(presented)
        found: TokenConfig | None = None
        for expected, entry in self._tokens:
            if hmac.compare_digest(digest, expected) and found is None:
                found = entry
        if found is None:
            return None
        return Principal(
            found.agent, found.trust, found.name or None, "token", token_identity(found.token)
        )

    def principal_for(self, authorization: str | None, remote: str | None) -> Principal:
        """The caller of a token-guarded door (/v1, /mcp, /metrics), or `Unauthorized`. A wrong
        token is 401 even from loopback: upgrading a client with a revoked or mistyped (maybe
        lower-trust) token to full access would hide the mistake and widen its access. Tokens
        are never logged."""
        if authorization is not None:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized(
                    "the Authorization header must be 'Bearer <token>'",
                    'Bearer realm="lobug", error="invalid_request"',
                )
            principal = self.authenticate(token.strip())
            if principal is None:
                log.warning("refused an unknown bearer token from %s", remote)
                raise Unauthorized(
                    "the bearer token is not valid", 'Bearer realm="lobug", error="invalid_token"'
                )
            return principal
        if self.allow_loopback and is_loopback(remote):
            return loopback_principal()
        raise Unauthorized(
            "a bearer token is required (Authorization: Bearer <token>)", 'Bearer realm="lobug"'
        )


class Unauthorized(errors.ApiError):
    """A 401 that carries its WWW-Authenticate challenge (RFC 6750 for bearer tokens)."""

    def __init__(self, message: str, challenge: str) -> None:
        super().__init__(401, "unauthorized", message)
        self.challenge = challenge


# -- categories (seed 001 §5) ------------------------------------------------------------------
@dataclass(frozen=True)
class Category:
    name: str
    context: str = "rag"  # all: always in context; rag: when retrieved; none: only on request
    rag_length: int | None = None  # how many of this category retrieval may inject
    system: bool = True


_SEED_ALLOWLISTS = {
    "supervisor": ["profile", "goals", "preferences", "event", "activity", "relationships",
                   "tasks"],
    "planner": ["goals", "tasks", "projects"],
    "stylist": ["preferences", "tone", "style"],
    "researcher": ["knowledge", "interests", "history"],
    "executor": ["tasks", "recent_activity", "constraints"],
}  # fmt: skip
# What the seed's example leaves out but this daemon writes: extraction's fact types, theory-of-
# mind insights (seed 001 §3), uncategorized memories, and procedural steps for the agents that
# execute (seed 001 §12). Without them the default `supervisor` token would see almost nothing.
_EXTRA_ALLOWLISTS = {
    "supervisor": ["personal", "preference", "knowledge", "relationship_dynamic", UNCATEGORIZED],
    "planner": ["procedural"],
    "stylist": ["preference"],
    "executor": ["procedural"],
}
BUILTIN_POLICY: Mapping[str, Any] = MappingProxyType(
    {
        "categories": {
            "system": [
                {"name": "profile", "context": "all"},
                {"name": "event", "context": "rag", "rag_length": 30},
                {"name": "activity", "context": "rag", "rag_length": 50},
                *(
                    {"name": name, "context": "rag"}
                    for name in (
                        "goals", "preferences", "relationships", "tasks", "projects", "tone",
                        "style", "knowledge", "interests", "history", "recent_activity",
                        "constraints", "personal", "preference", "relationship_dynamic",
                        UNCATEGORIZED,
                    )
                ),
                {"name": "procedural", "context": "none"},
            ],
            "custom": [],
        },
        "allowlists": {
            agent: [*names, *_EXTRA_ALLOWLISTS.get(agent, [])]
            for agent, names in _SEED_ALLOWLISTS.items()
        },
    }
)  # fmt: skip


@dataclass(frozen=True)
class CategoryPolicy:
    """Known categories with their context mode, and which agent may read which categories."""

    categories: Mapping[str, Category]
    allowlists: Mapping[str, frozenset[str]]

    @classmethod
    def default(cls) -> CategoryPolicy:
        return cls.from_mapping(BUILTIN_POLICY, "built-in")

    @classmethod
    def load(cls, path: Path | None) -> CategoryPolicy:
        """From a TOML file, or YAML when PyYAML is installed; None → the built-in policy."""
        if path is None:
            return cls.default()
        return cls.from_mapping(_read_policy_file(Path(path)), str(path))

    @classmethod
    def from_mapping(cls, data: Any, origin: str) -> CategoryPolicy:
        """Validate the seed 001 §5 shape; a missing section keeps the built-in one."""

        def bad(where: str, message: str) -> ConfigError:
            return ConfigError(f"api.categories_file: {origin}: {where}: {message}")

        if not isinstance(data, Mapping):
            raise bad("top level", "expected a table with 'categories' and 'allowlists'")
        unknown = sorted(set(data) - {"categories", "allowlists"})
        if unknown:
            raise bad(unknown[0], "unknown key (known: categories, allowlists)")
        sections = data.get("categories", BUILTIN_POLICY["categories"])
        if not isinstance(sections, Mapping) or set(sections) - {"system", "custom"}:
            raise bad("categories", "expected a table with 'system' and 'custom' lists")
        categories: dict[str, Category] = {}
        for section in ("system", "custom"):
            default = BUILTIN_POLICY["categories"][section]
            entries = sections.get(section, default)
            if not isinstance(entries, list):
                raise bad(f"categories.{section}", "expected a list")
            for index, entry in enumerate(entries):
                item = _category(entry, section == "system", f"categories.{section}[{index}]", bad)
                if item.name in categories:
                    raise bad(f"categories.{section}[{index}]", f"duplicate name {item.name!r}")
                categories[item.name] = item
        categories.setdefault(UNCATEGORIZED, Category(UNCATEGORIZED, "rag"))
        raw_lists = data.get("allowlists", BUILTIN_POLICY["allowlists"])
        if not isinstance(raw_lists, Mapping):
            raise bad("allowlists", "expected a table of agent = [categories]")
        allowlists: dict[str, frozenset[str]] = {}
        for agent, names in raw_lists.items():
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise bad(f"allowlists.{agent}", "expected a list of category names")
            for name in names:
                if name != WILDCARD and name not in categories:
                    known = ", ".join(sorted(categories))
                    raise bad(f"allowlists.{agent}", f"unknown category {name!r} (known: {known})")
            allowlists[str(agent)] = frozenset(names)
        return cls(MappingProxyType(categories), MappingProxyType(allowlists))

    # -- queries ---------------------------------------------------------------------------------
    def allowed(self, principal: Principal) -> frozenset[str] | None:
        """The principal's categories; None means unrestricted (all, uncategorized included)."""
        names = self.allowlists.get(principal.agent)
        if names is None:
            return None if principal.trust == "full" else frozenset()
        return None if WILDCARD in names else names

    def allows(self, principal: Principal, category: str | None) -> bool:
        allowed = self.allowed(principal)
        return allowed is None or (category or UNCATEGORIZED) in allowed

    def check_categories(
        self, principal: Principal, requested: Iterable[str] | None = None
    ) -> list[str] | None:
        """The categories a read filters on; None means no filter. 403 names any disallowed one.

        Nothing requested → the agent's whole allowlist (sorted), or None when unrestricted.
        """
        wanted = _clean_categories(requested)
        allowed = self.allowed(principal)
        if not wanted:
            return None if allowed is None else sorted(allowed)
        if allowed is not None:
            refused = [name for name in wanted if name not in allowed]
            if refused:
                raise errors.ApiError(
                    403,
                    "forbidden",
                    f"{principal.describe()} may not read categor"
                    f"{'y' if len(refused) == 1 else 'ies'} {', '.join(refused)} "
                    f"(allowed: {', '.join(sorted(allowed)) or 'none'})",
                    details={"agent": principal.agent, "categories": refused},
                )
        return wanted

    def act_as(self, principal: Principal, agent: str | None) -> Principal:
        """The principal acting as the request's `agent`: allowed only when it narrows access."""
        if agent is None or agent == principal.agent:
            return principal
        if not isinstance(agent, str) or not agent.strip() or len(agent) > 64:
            raise errors.invalid_request("'agent' must be 1-64 characters", field="agent")
        target = replace(principal, agent=agent.strip())
        mine, theirs = self.allowed(principal), self.allowed(target)
        if mine is None or (theirs is not None and theirs <= mine):
            return target
        raise errors.forbidden(
            f"{principal.describe()} may not act as agent '{target.agent}', which may read "
            "categories it may not"
        )

    def context_mode(self, category: str | None) -> str:
        """all | rag | none; an unknown category is retrieved like any other (rag)."""
        known = self.categories.get(category or UNCATEGORIZED)
        return known.context if known else "rag"

    def rag_length(self, category: str | None) -> int | None:
        known = self.categories.get(category or UNCATEGORIZED)
        return known.rag_length if known else None

    def with_context(self, mode: str) -> tuple[str, ...]:
        return tuple(name for name, c in self.categories.items() if c.context == mode)


def _category(entry: Any, system: bool, where: str, bad: Any) -> Category:
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, Mapping):
        raise bad(where, "expected a table with name, context and optional rag_length")
    unknown = sorted(set(entry) - {"name", "context", "rag_length"})
    if unknown:
        raise bad(where, f"unknown key {unknown[0]} (known: name, context, rag_length)")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise bad(where, f"name must be lowercase letters, digits, '_', '-' or '.', got {name!r}")
    context = entry.get("context", "rag")
    if context not in CONTEXT_MODES:
        raise bad(where, f"context must be one of {', '.join(CONTEXT_MODES)}, got {context!r}")
    rag_length = entry.get("rag_length")
    if rag_length is not None:
        if context != "rag":
            raise bad(where, "rag_length applies only to context 'rag'")
        if isinstance(rag_length, bool) or not isinstance(rag_length, int):
            raise bad(where, f"rag_length must be an integer, got {rag_length!r}")
        if not 1 <= rag_length <= 10_000:
            raise bad(where, f"rag_length must be between 1 and 10000, got {rag_length}")
    return Category(name, context, rag_length, system)


def _clean_categories(requested: Iterable[str] | None) -> list[str]:
    if requested is None:
        return []
    if isinstance(requested, str) or not isinstance(requested, Iterable):
        raise errors.invalid_request("'categories' must be a list of strings", field="categories")
    result: list[str] = []
    for item in requested:
        if not isinstance(item, str) or not 0 < len(item.strip()) <= MAX_CATEGORY_CHARS:
            raise errors.invalid_request(
                f"each category must be a string of 1-{MAX_CATEGORY_CHARS} characters",
                field="categories",
            )
        name = item.strip().lower()
        if name not in result:
            result.append(name)
        if len(result) > MAX_REQUESTED_CATEGORIES:
            raise errors.invalid_request(
                f"at most {MAX_REQUESTED_CATEGORIES} categories per request", field="categories"
            )
    return result


def _read_policy_file(path: Path) -> Any:
    where = f"api.categories_file: {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: file does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot be read: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise ConfigError(
                f"{where}: YAML needs PyYAML (pip install PyYAML); or write the file as TOML"
            ) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
