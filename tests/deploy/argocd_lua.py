"""Run an Argo CD Lua health check the way Argo CD does, in a real Lua 5.1 (lupa.lua51).

Argo CD (util/lua/lua.go, ``VM.runLua``) runs a health script in a fresh gopher-lua state (Lua
5.1 semantics) with the standard libraries skipped and only ``package``, the base library,
``table`` and a reduced ``os`` (``time`` and ``date``) opened, unless the admin sets
``resource.customizations.useOpenLibs.<group>_<kind>``. The resource is the global ``obj``,
converted from its JSON: objects become tables keyed by field name, arrays 1-indexed tables,
``null`` nil. The script's return value must be a table; Argo CD encodes it to JSON and reads
``status`` and ``message``, and replaces a status outside its six values with ``Unknown``.

This sandbox mirrors that library set: ``string``, ``math``, ``io``, ``debug`` and ``coroutine``
are removed and strings lose their metatable (without gopher-lua's string library ``s:sub()``
fails there too), so a script that passes here does not lean on a library Argo CD withholds.
"""

from __future__ import annotations

from typing import Any

from lupa import lua51

# gitops-engine pkg/health: the statuses Argo CD accepts from a health script.
ALLOWED_STATUSES = frozenset({"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"})

_SANDBOX = """
debug.setmetatable("", nil)
string = nil
math = nil
io = nil
coroutine = nil
os = {time = os.time, date = os.date}
debug = nil
"""


def new_runtime() -> Any:
    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False, unpack_returned_tuples=False)
    runtime.execute(_SANDBOX)
    return runtime


def to_lua(runtime: Any, value: Any) -> Any:
    """A decoded JSON value as Argo CD hands it to Lua (util/lua/lua.go ``decodeValue``)."""
    if isinstance(value, dict):
        table = runtime.table()
        for key, item in value.items():
            if item is not None:
                table[key] = to_lua(runtime, item)
        return table
    if isinstance(value, list):
        table = runtime.table()
        for index, item in enumerate(value, start=1):
            if item is not None:
                table[index] = to_lua(runtime, item)
        return table
    return value


def from_lua(value: Any) -> Any:
    if lua51.lua_type(value) == "table":
        return {key: from_lua(item) for key, item in value.items()}
    return value


def run_health(script: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The table the script returns for ``obj``, as a dict; a Lua error raises ``LuaError``."""
    runtime = new_runtime()
    runtime.globals().obj = to_lua(runtime, obj)
    result = runtime.execute(script)
    if lua51.lua_type(result) != "table":
        raise TypeError(
            f"the health script returned {lua51.lua_type(result) or type(result).__name__}, not a table"
        )
    decoded = from_lua(result)
    assert isinstance(decoded, dict)
    return decoded
