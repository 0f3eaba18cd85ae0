"""Who may use a shared app: the sign-in pairs handed to gradio's own ``auth``, and the warning an open
instance shows.

Why here and not in the launcher: the pairs come from three places (``--auth user:password``, repeatable;
``--auth-file``; ``DEEPSEEK_OCR_AUTH`` / ``DEEPSEEK_OCR_AUTH_FILE`` through the settings) and must be
checked before the server starts, and the same facts decide the warning printed at start and the banner
in the page: an app bound to a non-loopback address, or reachable through a share link (one that was
created: the launcher asks once it knows), without sign-in lets anyone who reaches it run conversions on
the machine and read what others convert.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.exceptions import ConfigError

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

AUTH_HINT = "start it with --auth user:password (repeatable), --auth-file FILE or DEEPSEEK_OCR_AUTH"


@dataclass(frozen=True)
class Access:
    """The sign-in pairs (none: the app is open) and why an open app is exposed (None: it is not)."""

    users: tuple[tuple[str, str], ...] = ()
    warning: str | None = None

    @property
    def gradio_auth(self) -> list[tuple[str, str]] | None:
        """What ``Blocks.launch(auth=...)`` takes."""
        return list(self.users) or None


def parse_pairs(lines: Iterable[str], where: str) -> list[tuple[str, str]]:
    """``user:password`` entries (the first colon splits; blank lines and ``#`` comments skipped)."""
    pairs = []
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user.strip() or not password:
            raise ConfigError(
                f"{where}, entry {n}: expected user:password (a user name, a colon, a password)."
            )
        pairs.append((user.strip(), password))
    return pairs


def split_setting(value: str) -> list[str]:
    """``DEEPSEEK_OCR_AUTH``: pairs separated by newlines, or by commas when there is no newline (a
    password with a comma needs the newline form or an auth file)."""
    return value.splitlines() if "\n" in value else value.split(",")


def read_auth_file(path: str | Path) -> list[tuple[str, str]]:
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"The auth file {path} does not exist.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"The auth file {path} cannot be read: {exc}") from exc
    pairs = parse_pairs(text.splitlines(), f"auth file {path}")
    if not pairs:
        raise ConfigError(f"The auth file {path} names no user (one user:password per line).")
    return pairs


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``0.0.0.0`` accepts all)."""
    name = (host or "").strip().strip("[]").lower()
    if name in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def resolve_access(settings: Settings, *, share: bool | None = None) -> Access:
    """The app's sign-in pairs from the settings (``auth`` and ``auth_file``) and the warning an open,
    exposed instance shows. Raises ``ConfigError`` for a malformed entry or a user named twice with
    different passwords."""
    pairs: list[tuple[str, str]] = []
    if settings.auth:
        pairs += parse_pairs(split_setting(settings.auth), "--auth / DEEPSEEK_OCR_AUTH")
    if settings.auth_file:
        pairs += read_auth_file(settings.auth_file)
    users: dict[str, str] = {}
    for user, password in pairs:
        if users.get(user, password) != password:
            raise ConfigError(f"The user {user!r} is given twice with different passwords.")
        users[user] = password
    share = settings.share if share is None else share
    warning = None
    if not users:
        exposed = []
        if not is_loopback(settings.host):
            exposed.append(f"it listens on {settings.host} (other machines can reach it)")
        if share:
            exposed.append("it has a public share link")
        if exposed:
            warning = (
                f"This app has no sign-in and {' and '.join(exposed)}: anyone who reaches it can run "
                f"conversions on this machine and read what is converted here. To require sign-in, {AUTH_HINT}."
            )
    return Access(users=tuple(users.items()), warning=warning)


__all__ = ["AUTH_HINT", "Access", "is_loopback", "parse_pairs", "read_auth_file", "resolve_access"]
