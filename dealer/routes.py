"""Routes: which transport serves which game channel (``DEALER_ROUTES``, docs/ROUTES.md);
a helper, with no store and no transport."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dealer.detail import DETAILS, PostDetail, from_settings
from dealer.formats import FORMATS

KINDS = ("discord", "dir", "stdout", "memory", "email", "discourse")
DEFAULT_FORMATS = {"discord": "discord", "dir": "markdown", "stdout": "plain", "memory": "markdown",
                   "email": "plain", "discourse": "markdown"}
"""The format of each destination kind, unless the route names one."""
PM = "pm"
LINKED = ("discord", "email")
"""Platforms a private post reaches only for a player with a linked account there."""
DEFAULT = "*"
ACCOUNT = re.compile(
    r"^(?P<platform>[a-z]+):(?P<id>\d{1,20}|[^@\s:,]+@[^@\s:,]+|(?<=discourse:)[\w.\-]{1,60})$"
)
"""An account written as a recipient or sender: ``discord:ID``, ``email:ADDRESS`` ..."""
_TOPIC = re.compile(r"^topic/(\d{1,12})$")
_CHANNEL_ID = re.compile(r"^channel/(\d{1,20})$")


class BadRoute(ValueError):
    """A route the table cannot use; the message says which and why."""


@dataclass(frozen=True)
class Destination:
    """Where a route leads: kind, argument, format, and its posts' detail (None: the setting's)."""

    kind: str
    arg: str
    format: str
    detail: str | None = None

    @property
    def spec(self) -> str:
        """The destination as written (without its format)."""
        return f"{self.kind}:{self.arg}" if self.arg else self.kind

    @property
    def transport(self) -> str:
        """The transport that serves it: one publisher per transport (``dir:PATH`` each)."""
        return self.spec if self.kind == "dir" else self.kind

    @property
    def discord_channel(self) -> int | None:
        """The Discord channel id of a ``discord:channel/ID`` destination."""
        match = _CHANNEL_ID.match(self.arg) if self.kind == "discord" else None
        return int(match.group(1)) if match else None

    def __str__(self) -> str:
        default = DEFAULT_FORMATS.get(self.kind)
        text = self.spec if self.format == default else f"{self.spec}|{self.format}"
        return f"{text}|detail={self.detail}" if self.detail else text


def parse_destination(text: str) -> Destination:
    """``discord:channel/123``, ``dir:var/forum|bbcode|detail=full``, ``stdout``...; or :class:`BadRoute`."""
    spec, _, options = text.strip().partition("|")
    fmt, detail = _options(text, options)
    kind, _, arg = spec.strip().partition(":")
    kind, arg, fmt = kind.strip().lower(), arg.strip(), fmt.strip().lower()
    if kind not in KINDS:
        raise BadRoute(
            f"{text.strip()!r}: unknown destination; use discord:channel/ID, discord:dm, "
            "discord:webhook, dir:PATH, stdout or memory"
        )
    if kind == "discord" and not (_CHANNEL_ID.match(arg) or arg in ("dm", "webhook")):
        raise BadRoute(
            f"{text.strip()!r}: a Discord destination is discord:channel/ID (the channel's "
            "numeric id), discord:dm or discord:webhook"
        )
    if kind == "email" and arg and not re.match(r"^[^@\s]+@[^@\s]+$", arg):
        raise BadRoute(f"{text.strip()!r}: an e-mail destination is email, or email:LIST_ADDRESS")
    if kind == "discourse" and arg and not (_TOPIC.match(arg) or arg == "pm"):
        raise BadRoute(f"{text.strip()!r}: a Discourse destination is discourse, discourse:topic/ID "
                       "or discourse:pm")
    if kind == "dir" and not arg:
        raise BadRoute(f"{text.strip()!r}: a directory destination names its folder: dir:PATH")
    if kind in ("stdout", "memory") and arg:
        raise BadRoute(f"{text.strip()!r}: {kind} takes no argument")
    fmt = fmt or DEFAULT_FORMATS[kind]
    if fmt not in FORMATS:
        raise BadRoute(f"{text.strip()!r}: unknown format {fmt!r}; use {', '.join(sorted(FORMATS))}")
    if kind == "discord" and fmt != "discord":
        raise BadRoute(f"{text.strip()!r}: Discord takes its own format (discord), not {fmt!r}")
    return Destination(kind, arg, fmt, detail)


def _options(text: str, options: str) -> tuple[str, str | None]:
    """A destination's format and detail, from what follows its first ``|``, in any order."""
    fmt, detail = "", None
    for option in (o.strip().lower() for o in options.split("|")) if options else ():
        name, sep, value = (part.strip() for part in option.partition("="))
        if sep and name == "detail" and value in DETAILS and detail is None:
            detail = value
        elif sep:
            raise BadRoute(f"{text.strip()!r}: {option!r}: a route's option is detail=brief or "
                           "detail=full (once)")
        elif fmt:
            raise BadRoute(f"{text.strip()!r}: two formats ({fmt!r}, {option!r}); name one")
        else:
            fmt = option
    return fmt, detail


@dataclass
class RouteTable:
    """The routes in force: each channel's destination and the default one."""

    routes: dict[str, Destination] = field(default_factory=dict)
    default: Destination = field(default_factory=lambda: Destination("dir", "var/outbox", "markdown"))
    more_pm: tuple[Destination, ...] = ()
    """The ``pm`` route's further destinations (``pm=discord:dm,email``), in order."""

    def for_channel(self, channel: str) -> Destination:
        """The destination of a public post in ``channel``."""
        return self.routes.get(channel, self.default)

    def for_post(self, channel: str, recipient: str | None, accounts: dict[str, str]) -> Destination:
        """The destination of a post: public by its channel, private by the first of the ``pm``
        route's destinations that reaches the player (:data:`LINKED`), else the default route."""
        if recipient is None:
            return self.for_channel(channel)
        account = ACCOUNT.match(recipient)
        if account:
            return Destination(account.group("platform"), "dm", DEFAULT_FORMATS.get(account.group("platform"), "plain"))
        for route in (self.routes.get(PM, self.default), *self.more_pm):
            if route.kind not in LINKED or route.kind in accounts:
                return route
        return self.default

    def channel_of(self, kind: str, arg: str) -> str | None:
        """The game channel a platform's place is routed to (``discord``, ``channel/123``)."""
        for channel, dest in self.routes.items():
            if dest.kind == kind and dest.arg == arg:
                return channel
        return None

    def details(self) -> dict[str, str | None]:
        """Each route's own detail by its channel (``*`` the default route's)."""
        return {**{c: d.detail for c, d in self.routes.items()}, "*": self.default.detail}

    def discord_channels(self) -> dict[int, str]:
        """Each routed Discord channel id with its game channel."""
        return {d.discord_channel: c for c, d in self.routes.items() if d.discord_channel is not None}

    def uses(self, kind: str) -> bool:
        """True when any route (the default included) leads to ``kind``."""
        return any(d.kind == kind for d in (self.default, *self.routes.values(), *self.more_pm))

    def problems(self, *, discord_token: bool, webhook_url: bool, smtp_server: bool = True,
                 discourse_url: bool = True) -> list[str]:
        """What keeps this table from working with the settings given (empty: none)."""
        found = []
        entries = [*self.routes.items(), ("*", self.default), *((PM, d) for d in self.more_pm)]
        for channel, dest in sorted(entries, key=lambda entry: entry[0]):
            if dest.kind == "email" and not smtp_server:
                found.append(f"{channel}: {dest.spec} needs DEALER_SMTP_SERVER (and DEALER_EMAIL_FROM)")
            if dest.kind == "discourse" and not discourse_url:
                found.append(f"{channel}: {dest.spec} needs DEALER_DISCOURSE_URL (and its API key)")
        for channel, dest in sorted(self.routes.items()):
            if dest.kind == "discord" and dest.arg == "dm" and channel != PM:
                found.append(f"{channel}: discord:dm serves only the pm route")
            if channel == PM and dest.kind == "discord" and dest.arg == "webhook":
                found.append("pm: a webhook can only post in its own channel, never a direct message")
            if dest.kind == "discord" and dest.arg != "webhook" and not discord_token:
                found.append(f"{channel}: {dest.spec} needs DEALER_DISCORD_TOKEN (the bot's token)")
            if dest.kind == "discord" and dest.arg == "webhook" and not webhook_url:
                found.append(f"{channel}: discord:webhook needs DEALER_DISCORD_WEBHOOK_URL")
        if any(d.kind == "discord" for d in self.more_pm):
            found.append("pm: discord:dm comes first of the pm route's destinations")
        if self.default.kind == "discord":
            found.append(f"*: the default route cannot be Discord ({self.default.spec}); "
                         "route each channel instead")
        ids = [d.discord_channel for d in self.routes.values() if d.discord_channel is not None]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            names = sorted(c for c, d in self.routes.items() if d.discord_channel == dup)
            found.append(f"{', '.join(names)}: one Discord channel ({dup}) serves several game "
                         "channels; a message there could not be told apart")
        return found

    def lines(self) -> list[str]:
        """The table as ``dealer routes`` prints it."""
        rows = [(c, ", ".join(map(str, [d, *self.more_pm])) if c == PM else str(d))
                for c, d in sorted(self.routes.items())] + [("*", str(self.default))]
        width = max(len(c) for c, _ in rows)
        return [f"{c.ljust(width)}  ->  {d}" for c, d in rows]


def parse_routes(text: str, default: str) -> RouteTable:
    """The table of ``DEALER_ROUTES`` over ``default`` (``DEALER_PUBLISH``); :class:`BadRoute` names the entry."""
    table = RouteTable(default=parse_destination(default))
    for raw in re.split(r"[;\n]", text or ""):
        entry = raw.strip()
        if not entry:
            continue
        channel, sep, dest = entry.partition("=")
        channel = channel.strip()
        if not sep or not channel or not dest.strip():
            raise BadRoute(f"{entry!r}: write a route as CHANNEL=DESTINATION, e.g. "
                           "#the-raceway=discord:channel/123456789012345678")
        if channel in table.routes or (channel == DEFAULT and text.count(f"{DEFAULT}=") > 1):
            raise BadRoute(f"{channel}: routed twice")
        try:
            destination, *more = [parse_destination(d) for d in (dest.split(",") if channel == PM else [dest])]
        except BadRoute as exc:
            raise BadRoute(f"{channel}: {exc}") from None
        if channel == DEFAULT:
            table.default = destination
        else:
            table.routes[channel], table.more_pm = destination, (*table.more_pm, *more)
    return table


def post_detail_policy(detail: str, routes: str, publish: str, web_url: str) -> PostDetail:
    """The posts' detail from the settings; routes that do not parse are reported elsewhere."""
    try:
        details = parse_routes(routes, publish).details()
    except BadRoute:
        details = {}
    return from_settings(detail, details, web_url)
