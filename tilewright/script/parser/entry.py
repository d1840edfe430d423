"""Entry points of the parser: ``T.prim_func`` and ``ir_module`` decorators on Python
source, and ``from_source`` on script text; each returns IR or raises ``ParseError``."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any

from tilewright.ir.function import PrimFunc
from tilewright.ir.module import IRModule
from tilewright.script.parser.errors import ParseError, SourceMap
from tilewright.script.parser.parser import Parser


def prim_func(
    func: Callable[..., Any] | None = None,
    *,
    private: bool = False,
    check_well_formed: bool = True,
    s_tir: bool = False,
) -> Any:
    """Parse a Python function written in script syntax into a ``PrimFunc``.

    Args:
        func: the decorated function; its source is read with ``inspect``.
        private: accepted for compatibility with TVM's spelling; no effect.
        check_well_formed: accepted for compatibility with TVM's spelling; the parser
            checks what it parses either way.
        s_tir: TVM's newer marking of a function of schedulable blocks; the function then
            prints as ``@T.prim_func(s_tir=True)`` with ``T.sblock`` blocks.

    Example::

        >>> @T.prim_func
        ... def add_one(A: T.Buffer((8,), "float32")):
        ...     for i in range(8):
        ...         A[i] = A[i] + 1.0
        >>> type(add_one).__name__
        'PrimFunc'
    """
    __tracebackhide__ = True  # pytest and IPython start the traceback at the user's line
    caller = sys._getframe(1)
    if func is None:

        def decorate(f: Callable[..., Any]) -> PrimFunc:
            __tracebackhide__ = True
            try:
                return _parse_function(f, caller)
            except ParseError as err:
                raise err.with_traceback(None) from None  # the script's own line is below

        return decorate
    try:
        return _parse_function(func, caller)
    except ParseError as err:
        raise err.with_traceback(None) from None  # the script's own line is below


def ir_module(cls: type | None = None, *, s_tir: bool = False) -> Any:
    """An ``IRModule`` of the ``@T.prim_func`` methods of a class, keyed by method name.

    ``@I.ir_module(s_tir=True)`` (TVM's newer spelling) marks every function as
    ``@T.prim_func(s_tir=True)`` does.

    Example::

        >>> @I.ir_module
        ... class Module:
        ...     @T.prim_func
        ...     def main(A: T.Buffer((8,), "float32")):
        ...         A[0] = T.float32(1)
        >>> list(Module)
        ['main']
    """
    if cls is None:
        return lambda c: ir_module(c, s_tir=s_tir)
    if isinstance(cls, IRModule):
        return _marked_s_tir(cls) if s_tir else cls
    if not isinstance(cls, type):
        raise TypeError(f"ir_module decorates a class, found {type(cls).__name__}")
    functions: dict[str, PrimFunc] = {}
    for name, value in vars(cls).items():
        if isinstance(value, PrimFunc):
            functions[name] = value
        elif isinstance(value, types.FunctionType):
            raise TypeError(
                f"ir_module {cls.__name__}: method {name} is not decorated with @T.prim_func"
            )
    if not functions:
        raise TypeError(f"ir_module {cls.__name__} has no @T.prim_func methods")
    module = IRModule(functions)
    return _marked_s_tir(module) if s_tir else module


def _marked_s_tir(mod: IRModule) -> IRModule:
    return IRModule({name: f.replace(spelling="s_tir") for name, f in mod.functions})


def from_source(
    text: str, filename: str = "<string>", *, check_well_formed: bool = True
) -> IRModule | PrimFunc:
    """Parse script text (as ``mod.script()`` prints it) into an ``IRModule`` or ``PrimFunc``.

    The text holds one ``@I.ir_module`` class or one ``@T.prim_func`` function; the names
    ``T``, ``I``, ``tvm``, ``tw`` and ``tilewright`` refer to tilewright's namespaces, and
    import statements of ``tilewright``/``tvm`` modules bind names the same way.
    ``check_well_formed`` is accepted as TVM's keyword; what is parsed is checked either way.

    Example::

        >>> mod = from_source(mod.script())
    """
    __tracebackhide__ = True
    try:
        return _from_source(text, filename)
    except ParseError as err:
        raise err.with_traceback(None) from None  # the script's own line is below


def _from_source(text: str, filename: str) -> IRModule | PrimFunc:
    lines = tuple(text.splitlines())
    source = SourceMap(filename, lines)
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as err:
        lineno = err.lineno or 1
        line_text = lines[lineno - 1] if lineno <= len(lines) else ""
        raise ParseError(
            f"invalid Python syntax: {err.msg}", filename, lineno, err.offset or 1, line_text
        ) from None
    env = _default_environment()
    results: list[IRModule | PrimFunc] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            _import(node, env, source)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        elif isinstance(node, ast.ClassDef):
            results.append(_module_from_class(node, env, source))
        elif isinstance(node, ast.FunctionDef):
            _expect_prim_func(node, env, source)
            results.append(Parser(source, env).parse_function(node))
        else:
            raise source.error(
                node, "expected an @I.ir_module class or a @T.prim_func function at top level"
            )
    if len(results) != 1:
        found = "nothing" if not results else f"{len(results)} definitions"
        raise source.error(
            tree.body[-1] if tree.body else None,
            f"expected one @I.ir_module class or @T.prim_func function, found {found}",
        )
    return results[0]


def parse(program: str | type | Callable[..., Any]) -> IRModule | PrimFunc:
    """Parse script text, an ``ir_module`` class or a ``prim_func`` Python function.

    Example::

        >>> parse("@T.prim_func\\ndef f(A: T.Buffer((4,), 'float32')):\\n    A[0] = 1.0\\n")
    """
    __tracebackhide__ = True
    try:
        if isinstance(program, str):
            return _from_source(program, "<string>")
        if isinstance(program, type):
            return ir_module(program)
        return _parse_function(program, sys._getframe(1))
    except ParseError as err:
        raise err.with_traceback(None) from None  # the script's own line is below


def _parse_function(func: Callable[..., Any], caller: types.FrameType | None) -> PrimFunc:
    if isinstance(func, PrimFunc):
        return func
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"prim_func decorates a Python function, found {type(func).__name__}")
    source, text = _source_of(func)
    try:
        tree = ast.parse(text, source.filename)
    except SyntaxError as err:  # the source as inspect found it, e.g. oddly indented
        line, column = err.lineno or 1, max((err.offset or 1) - 1, 0)
        where = ast.Pass(lineno=line, col_offset=column, end_lineno=line, end_col_offset=column + 1)
        raise source.error(where, f"invalid Python syntax: {err.msg}") from None
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise source.error(node, "expected a def of a @T.prim_func function")
    return Parser(source, _environment(func, caller)).parse_function(node)


def _source_of(func: types.FunctionType) -> tuple[SourceMap, str]:
    try:
        lines, start = inspect.getsourcelines(func)
    except (OSError, TypeError) as err:
        raise TypeError(
            f"cannot read the source of {func.__qualname__} ({err}); "
            "use tilewright.script.from_source(text) for programs built as strings"
        ) from None
    filename = inspect.getsourcefile(func) or func.__code__.co_filename
    text = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip())
    if text[:1] in (" ", "\t"):
        # Continuation lines indented less than the def: strip the def's indentation only.
        text = "".join(line[min(indent, len(line) - len(line.lstrip())) :] for line in lines)
    removed = indent - (len(text) - len(text.lstrip(" \t")))
    source = SourceMap(filename, tuple(line.rstrip("\n") for line in lines), start - 1, removed)
    return source, text


def _environment(func: types.FunctionType, caller: types.FrameType | None) -> dict[str, object]:
    """Names a script may use: the function's globals, then the locals of the frames that
    define it (annotations are evaluated there, not in the closure), then its closure."""
    env: dict[str, object] = dict(func.__globals__)
    frames = []
    frame = caller
    while frame is not None and frame.f_globals is func.__globals__:
        frames.append(frame)
        frame = frame.f_back
    for frame in reversed(frames):
        if frame.f_locals is not frame.f_globals:
            env.update(frame.f_locals)
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:  # an empty cell: the name is assigned after the def
            continue
    return env


def _default_environment() -> dict[str, object]:
    import tilewright
    from tilewright.script import ir as ir_namespace
    from tilewright.script import tir as tir_namespace

    return {
        "T": tir_namespace,
        "I": ir_namespace,
        "tvm": tilewright,
        "tw": tilewright,
        "tilewright": tilewright,
        "__builtins__": builtins,
    }


def _import(node: ast.Import | ast.ImportFrom, env: dict[str, object], source: SourceMap) -> None:
    def load(name: str) -> types.ModuleType:
        parts = name.split(".")
        if parts[0] in ("tvm", "tw"):
            parts[0] = "tilewright"
        if parts[0] != "tilewright":
            raise source.error(node, f"script text may import tilewright (or tvm) only, not {name}")
        try:
            return importlib.import_module(".".join(parts))
        except ImportError as err:
            raise source.error(node, f"cannot import {name}: {err}") from None

    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                env[alias.asname] = load(alias.name)
            else:
                load(alias.name)
                env[alias.name.split(".")[0]] = load(alias.name.split(".")[0])
        return
    module = load(node.module or "")
    for alias in node.names:
        try:
            value = getattr(module, alias.name)
        except AttributeError:
            value = load(f"{module.__name__}.{alias.name}")
        env[alias.asname or alias.name] = value


def _decorator_is(
    node: ast.expr, target: object, env: dict[str, object], source: SourceMap
) -> bool:
    callee = node.func if isinstance(node, ast.Call) else node
    return Parser(source, env).eval(callee) is target


def _expect_prim_func(node: ast.FunctionDef, env: dict[str, object], source: SourceMap) -> None:
    if not any(_decorator_is(d, prim_func, env, source) for d in node.decorator_list):
        raise source.error(node, f"function {node.name}: expected the decorator @T.prim_func")


def _module_from_class(node: ast.ClassDef, env: dict[str, object], source: SourceMap) -> IRModule:
    if not any(_decorator_is(d, ir_module, env, source) for d in node.decorator_list):
        raise source.error(node, f"class {node.name}: expected the decorator @I.ir_module")
    functions: dict[str, PrimFunc] = {}
    for item in node.body:
        if isinstance(item, ast.Pass) or (
            isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)
        ):
            continue
        if not isinstance(item, ast.FunctionDef):
            raise source.error(item, f"class {node.name}: expected @T.prim_func methods only")
        _expect_prim_func(item, env, source)
        functions[item.name] = Parser(source, env).parse_function(item)
    if not functions:
        raise source.error(node, f"ir_module {node.name} has no @T.prim_func methods")
    module = IRModule(functions)
    s_tir = any(
        isinstance(d, ast.Call)
        and any(k.arg == "s_tir" and getattr(k.value, "value", None) is True for k in d.keywords)
        for d in node.decorator_list
    )
    return _marked_s_tir(module) if s_tir else module
