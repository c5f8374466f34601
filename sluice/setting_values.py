"""A setting's value from text: ``--set key=value``, environment variables and sizes such as
``512MiB`` (the checks that name the setting; :mod:`sluice.config` holds the settings)."""

from __future__ import annotations

from typing import Any

from sluice.errors import ConfigError


def parse_size(text: str) -> int:
    """Parse ``'512MiB'``, ``'2GB'``, ``'1048576'`` into bytes."""
    s = text.strip().lower().replace(" ", "")
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
             "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "k": 1 << 10,
             "m": 1 << 20, "g": 1 << 30, "b": 1}
    for unit, mult in units.items():
        if s.endswith(unit):
            num = s[: -len(unit)]
            break
    else:
        num, mult = s, 1
    try:
        value = float(num)
    except ValueError:
        raise ConfigError(f"cannot read {text!r} as a size (e.g. 512MiB, 2GB)") from None
    return int(value * mult)


def coerce_setting(name: str, value: Any, typ: Any) -> Any:
    tname = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if tname == "bool":
        if isinstance(value, bool):
            return value
        s = str(value).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name} must be true or false, not {value!r}")
    if tname == "int":
        if isinstance(value, bool):
            raise ConfigError(f"{name} must be a number, not {value!r}")
        if isinstance(value, int):
            return value
        if name.endswith("memory_limit") or name.endswith("_bytes"):
            return parse_size(str(value))
        try:
            return int(str(value).replace("_", ""))
        except ValueError:
            raise ConfigError(f"{name} must be an integer, not {value!r}") from None
    if tname == "float":
        if isinstance(value, bool):
            raise ConfigError(f"{name} must be a number, not {value!r}")
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{name} must be a number, not {value!r}") from None
    return str(value)


def parse_set_option(text: str) -> tuple[str, str]:
    """Split a CLI ``--set key=value``."""
    if "=" not in text:
        raise ConfigError(f"--set expects key=value, not {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()
