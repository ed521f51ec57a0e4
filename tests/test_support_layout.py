"""The tests' shared helpers have one home, ``tests/support/``: a test module never imports a ``conftest.py``
(pytest imports each conftest itself, under a name of its own, so importing it again makes a second copy of its
module and its fixtures), and no module outside tests/support defines its own copy of a shared helper."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"
# Helpers tests/support provides; a module-level definition of one of these names elsewhere is a copy.
SHARED = frozenset({"wait_for", "wait_until", "make_user", "free_port", "closed_port_addr", "closed_port_url"})


def modules() -> dict[str, ast.Module]:
    """Every Python module under tests/ but tests/support, parsed, by its path relative to the repository."""
    return {
        str(path.relative_to(TESTS.parent)): ast.parse(path.read_text(), filename=str(path))
        for path in sorted(TESTS.rglob("*.py"))
        if SUPPORT not in path.parents
    }


def conftest_imports(tree: ast.Module) -> list[str]:
    """The conftest modules ``tree`` imports, in any spelling: ``import tests.a.conftest``, ``from tests.a.conftest
    import x``, ``from tests.a import conftest``, ``from .conftest import x``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.rpartition(".")[2] == "conftest"]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module.rpartition(".")[2] == "conftest":
                found.append(module)
            found += [f"{module}.conftest" for alias in node.names if alias.name == "conftest"]
    return found


def shared_helper_copies(tree: ast.Module) -> list[str]:
    """Names of :data:`SHARED` that ``tree`` defines at module level (as a function or by assignment)."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [target.id for target in node.targets if isinstance(target, ast.Name)]
    return sorted(SHARED.intersection(names))


def test_no_test_module_imports_a_conftest():
    offenders = {path: found for path, tree in modules().items() if (found := conftest_imports(tree))}
    assert offenders == {}, "import these from tests.support instead"


def test_shared_helpers_are_defined_only_in_tests_support():
    offenders = {path: found for path, tree in modules().items() if (found := shared_helper_copies(tree))}
    assert offenders == {}, "use the one in tests.support instead"


def test_the_checks_see_every_spelling():
    """The two checks above pass only if they can fail: each spelling they look for is found."""
    imports = ast.parse(
        "import tests.sdk.conftest\n"
        "from tests.portal.conftest import make_user\n"
        "from tests.portal import conftest as portal_fixtures\n"
        "from .conftest import VAR\n"
        "from tests.support.factories import make_user\n"
    )
    assert conftest_imports(imports) == [
        "tests.sdk.conftest",
        "tests.portal.conftest",
        "tests.portal.conftest",
        ".conftest",
    ]
    copies = ast.parse(
        "def wait_until(condition): ...\n"
        "free_port = lambda: 0\n"
        "class FakePortal:\n"
        "    def wait_for(self, condition): ...\n"  # a method of its own is not a copy
    )
    assert shared_helper_copies(copies) == ["free_port", "wait_until"]
