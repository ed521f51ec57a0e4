"""Imports point one way (docs/architecture.md, "Layers"): every module's imports are read with ``ast`` and checked
against the rules the doc writes down, task names in strings included, and portal's modules form no import cycle.

The rules, as the doc states them:

- ``stats`` imports nothing of ``portal``, ``monitor`` or ``sparkjobs``;
- ``monitor`` and ``sparkjobs`` read the registry models (``portal.models`` and its modules) and nothing else of
  ``portal``; ``sparkjobs`` imports nothing of ``monitor``;
- ``portal.models`` imports, of the project, only ``portal.models``, ``portal.env`` and ``stats``: no services,
  access, web, API, tasks or views;
- inside ``monitor``: ``monitor.remoting`` imports nothing of the project but itself; ``monitor.sdk`` only
  ``monitor.remoting``, ``stats.histogram`` and ``monitor.trace.records`` (the trace format, pure);
  ``monitor.launcher`` only ``monitor.remoting``; ``monitor.sandbox`` only ``monitor.remoting`` and ``monitor.sdk``;
  and only the ``sandbox`` and ``rocketmq`` commands import the sandbox;
- no module outside ``portal`` names ``portal.tasks``, ``portal.services``, ``portal.web``, ``portal.api`` or
  ``portal.access`` in a string (a Celery task name is an import no ``import`` statement shows);
- portal's modules import each other without a cycle at module level (an import inside a function is allowed to
  break none: there is none to break).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("portal", "monitor", "stats", "sparkjobs")
PORTAL_UPPER = ("portal.tasks", "portal.services", "portal.web", "portal.api", "portal.access")
NAMED_IN_STRING = re.compile(r"\bportal\.(tasks|services|web|api|access)\b")


@dataclasses.dataclass(frozen=True)
class Import:
    target: str  # the module imported (for ``from a import b``: ``a.b`` when that is a module, else ``a``)
    line: int
    top_level: bool  # executed when the module is imported (not inside a function)


@dataclasses.dataclass(frozen=True)
class Module:
    name: str
    imports: tuple[Import, ...]
    strings: tuple[tuple[str, int], ...]  # string constants (docstrings left out) with their line


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _within_any(name: str, prefixes: Iterable[str]) -> bool:
    return any(_within(name, prefix) for prefix in prefixes)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def parse_module(name: str, source: str, is_module=lambda dotted: False, is_package: bool = False) -> Module:
    """The imports and string constants of module ``name`` (source text). ``is_module(dotted)`` tells whether a
    dotted name is a module, so ``from a import b`` counts as importing ``a.b`` when ``b`` is a module."""
    tree = ast.parse(source)
    package = name if is_package else name.rpartition(".")[0]
    nested: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            nested.update(id(child) for child in ast.walk(node) if child is not node)
    imports = []
    for node in ast.walk(tree):
        top = id(node) not in nested
        if isinstance(node, ast.Import):
            imports.extend(Import(alias.name, node.lineno, top) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                full = f"{base}.{alias.name}"
                imports.append(Import(full if is_module(full) else base, node.lineno, top))
    docstrings = _docstrings(tree)
    strings = tuple(
        (node.value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    )
    return Module(name, tuple(imports), strings)


def _allowed(importer: str, target: str) -> str | None:
    """None when ``importer`` may import ``target``, else the rule it breaks."""
    if not _within_any(target, PACKAGES):
        return None  # the standard library, Django and the other libraries
    if _within(importer, "stats") and not _within(target, "stats"):
        return "stats imports no other package of the project"
    if _within(importer, "sparkjobs") and _within(target, "monitor"):
        return "sparkjobs imports nothing of monitor"
    reads_portal = _within(target, "portal") and not _within(target, "portal.models")
    if _within_any(importer, ("monitor", "sparkjobs")) and reads_portal:
        return "monitor and sparkjobs read portal's models and nothing else of portal"
    if _within(importer, "portal.models") and not _within_any(target, ("portal.models", "portal.env", "stats")):
        return "portal.models imports only portal.models, portal.env and stats"
    if _within_any(importer, ("portal.services", "portal.api")) and _within(target, "portal.web"):
        return "portal's services and API import nothing of its pages (portal.web)"
    if _within(importer, "portal.services") and _within(target, "portal.api"):
        return "portal's services import nothing of its API"
    if _within(importer, "monitor.remoting") and not _within(target, "monitor.remoting"):
        return "monitor.remoting imports nothing of the project but itself"
    if _within(importer, "monitor.sdk") and not _within_any(
        target, ("monitor.sdk", "monitor.remoting", "stats.histogram", "monitor.trace.records")
    ):
        return "monitor.sdk imports only monitor.remoting, stats.histogram and monitor.trace.records"
    if _within(importer, "monitor.launcher") and not _within_any(target, ("monitor.launcher", "monitor.remoting")):
        return "monitor.launcher imports only monitor.remoting"
    if _within(importer, "monitor.sandbox") and not _within_any(
        target, ("monitor.sandbox", "monitor.remoting", "monitor.sdk")
    ):
        return "monitor.sandbox imports only monitor.remoting and monitor.sdk"
    sandbox_users = ("monitor.sandbox", "monitor.management.commands.sandbox", "monitor.management.commands.rocketmq")
    if _within(target, "monitor.sandbox") and not _within_any(importer, sandbox_users):
        return "only the sandbox and rocketmq commands import monitor.sandbox"
    return None


def violations(module: Module) -> list[str]:
    """Every import and string of ``module`` that breaks a rule, as ``module:line: target (rule)``."""
    found = []
    for imported in module.imports:
        rule = _allowed(module.name, imported.target)
        if rule:
            found.append(f"{module.name}:{imported.line}: imports {imported.target} ({rule})")
    if not _within(module.name, "portal"):
        for text, line in module.strings:
            if NAMED_IN_STRING.search(text):
                found.append(f"{module.name}:{line}: names {text!r} (only portal names portal's upper layers)")
    return found


def cycles(modules: Iterable[Module], within: str) -> list[list[str]]:
    """The import cycles (strongly connected components of more than one module, or a module importing itself)
    among the modules under ``within``, counting module-level imports only."""
    graph = {
        m.name: {i.target for i in m.imports if i.top_level and _within(i.target, within)}
        for m in modules
        if _within(m.name, within)
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; portal's graph is a few hundred nodes deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _module_name(path: Path) -> tuple[str, bool]:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def project_modules() -> list[Module]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name, is_package = _module_name(path)
            modules.append(parse_module(name, path.read_text(), _is_module, is_package))
    return modules


@pytest.fixture(scope="module")
def modules() -> list[Module]:
    return project_modules()


def test_no_module_imports_against_the_layers(modules):
    assert [v for module in modules for v in violations(module)] == []


def test_portals_modules_import_each_other_without_a_cycle(modules):
    assert cycles(modules, "portal") == []


def test_every_package_was_read(modules):
    names = {module.name for module in modules}
    assert {"portal.models", "portal.services.warnings.rules", "monitor.remoting", "stats", "sparkjobs"} <= names


# --- the checker itself, on synthetic modules ----------------------------------------------------------------------


def _violations_of(name: str, source: str) -> list[str]:
    return violations(parse_module(name, source, _is_module))


def test_an_upward_import_from_monitor_into_portals_services_fails():
    source = "from portal.services.warnings.thresholds import thresholds_for\n"
    [found] = _violations_of("monitor.collect.example", source)
    assert "monitor.collect.example:1: imports portal.services.warnings.thresholds" in found


def test_an_upward_import_inside_a_function_fails_too():
    source = "def later():\n    import portal.tasks\n"
    assert _violations_of("monitor.collect.example", source) != []


def test_a_model_importing_a_service_or_the_gate_fails():
    assert _violations_of("portal.models.example", "from portal.services import audit\n") != []
    assert _violations_of("portal.models.example", "from portal import access\n") != []
    assert _violations_of("portal.models.example", "from portal.models.crypto import EncryptedTextField\n") == []


def test_stats_importing_the_registry_fails():
    assert _violations_of("stats.queries.example", "from portal.models import Cluster\n") != []


def test_the_api_importing_a_pages_module_fails():
    assert _allowed("portal.api.views.messages", "portal.web.message_forms")
    assert _allowed("portal.services.messages.direct", "portal.api.serializers")
    assert _allowed("portal.web.views.messages", "portal.services.messages.direct") is None


def test_monitor_reading_the_registry_models_passes():
    assert _violations_of("monitor.collect.example", "from portal.models import Cluster\n") == []


def test_a_task_named_in_a_string_outside_portal_fails_but_a_docstring_may_mention_it():
    source = '"""Evaluated by portal.tasks.evaluate_warnings."""\nTASK = "portal.tasks.evaluate_warnings"\n'
    [found] = _violations_of("monitor.tasks.example", source)
    assert found.startswith("monitor.tasks.example:2: names 'portal.tasks.evaluate_warnings'")


def test_relative_imports_are_resolved_before_they_are_judged():
    module = parse_module("monitor.collect.example", "from ..tasks import traffic\nfrom . import probe\n", _is_module)
    assert [i.target for i in module.imports] == ["monitor.tasks.traffic", "monitor.collect.probe"]


def test_a_module_level_cycle_is_found_and_a_function_level_import_is_not_one():
    access = parse_module("portal.access", "from portal.models import registry\n", _is_module)
    registry = parse_module("portal.models.registry", "from portal import access\n", _is_module, False)
    assert cycles([access, registry], "portal") == [["portal.access", "portal.models.registry"]]
    lazy = parse_module("portal.models.registry", "def f():\n    from portal import access\n", _is_module)
    assert cycles([access, lazy], "portal") == []
