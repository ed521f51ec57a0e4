"""What the fuzz suite aims at, discovered rather than listed, so a new endpoint, filter or form field is fuzzed the
day it is added: every URL pattern of the project from the URL resolver (the API's router included, with each
method its viewset or view serves), every filter parameter the filter sets of ``portal/filters.py`` declare, every
query parameter a view reads by name, and every field name of the project's forms and serializers."""

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import django_filters
from django import forms
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern
from rest_framework import serializers

import portal

# Whom every endpoint is fuzzed as: nobody signed in, a member of the owning team, a portal admin.
ACTORS = ("anonymous", "member", "portal_admin")
# The HTTP methods tried on a page (a plain function view does not say which it serves: 405 is an answer too).
PAGE_METHODS = ("GET", "POST")
# Methods every DRF view answers by itself; OPTIONS is kept (it renders serializer metadata), HEAD is GET's twin.
SKIPPED_METHODS = frozenset({"head", "trace"})


@dataclass(frozen=True)
class PathParam:
    """A variable part of a URL: ``kind`` is "int" for an ``<int:...>`` converter, "text" for anything else."""

    name: str
    kind: str


@dataclass(frozen=True)
class Endpoint:
    """One URL pattern: ``parts`` are literal strings and PathParams in order; ``api`` is True under ``api/``."""

    name: str
    parts: tuple[str | PathParam, ...]
    methods: tuple[str, ...]
    api: bool

    @property
    def params(self) -> tuple[PathParam, ...]:
        return tuple(part for part in self.parts if isinstance(part, PathParam))

    def __str__(self) -> str:
        return self.name


_ROUTE_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
_REGEX_PARAM = re.compile(r"\(\?P<(?P<name>\w+)>(?:[^()\\]|\\.)*\)")


def _split(text: str, finder: re.Pattern, kind_of) -> list[str | PathParam]:
    parts: list[str | PathParam] = []
    position = 0
    for match in finder.finditer(text):
        parts.append(text[position : match.start()])
        parts.append(PathParam(match["name"], kind_of(match)))
        position = match.end()
    parts.append(text[position:])
    return parts


def _pattern_parts(pattern) -> list[str | PathParam]:
    """The literal and variable parts of one resolver level (a ``path()`` route or a ``re_path()`` regex)."""
    text = str(pattern.pattern)
    if isinstance(pattern.pattern, RoutePattern):
        return _split(text, _ROUTE_PARAM, lambda m: "int" if m["converter"] == "int" else "text")
    literal = text.removeprefix("^").removesuffix("$")
    parts = _split(literal, _REGEX_PARAM, lambda m: "text")
    return [re.sub(r"\\(.)", r"\1", part) if isinstance(part, str) else part for part in parts]


def _methods(callback, api: bool) -> tuple[str, ...]:
    if hasattr(callback, "actions"):  # a DRF viewset's route: the methods it maps to actions
        methods = list(callback.actions)
        return tuple(m.upper() for m in [*methods, "options"] if m not in SKIPPED_METHODS)
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view_class is not None:  # an APIView or a Django class-based view
        names = [m for m in view_class.http_method_names if hasattr(view_class, m) and m not in SKIPPED_METHODS]
        return tuple(m.upper() for m in names)
    return PAGE_METHODS


@cache
def endpoints() -> tuple[Endpoint, ...]:
    """Every URL pattern of the project, API and pages, with the methods it serves."""
    found: list[Endpoint] = []

    def walk(resolver: URLResolver, prefix: list, namespace: str) -> None:
        for pattern in resolver.url_patterns:
            parts = [*prefix, *_pattern_parts(pattern)]
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern, parts, inner)
                continue
            assert isinstance(pattern, URLPattern)
            merged: list[str | PathParam] = []
            for part in parts:
                if isinstance(part, str) and merged and isinstance(merged[-1], str):
                    merged[-1] += part
                else:
                    merged.append(part)
            route = "".join(p if isinstance(p, str) else f"<{p.name}>" for p in merged)
            api = route.startswith("api/")
            name = f"{namespace}{pattern.name}" if pattern.name else route
            found.append(Endpoint(name, tuple(merged), _methods(pattern.callback, api), api))

    walk(get_resolver(), [], "")
    return tuple(found)


def _subclasses(base) -> list:
    seen, stack = [], [base]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return [cls for cls in seen if cls.__module__.startswith("portal.")]


@cache
def filter_parameters() -> tuple[str, ...]:
    """Every parameter name the project's filter sets declare (``portal/filters.py``)."""
    import portal.filters  # noqa: F401  (the subclasses must be defined)

    names = {name for filterset in _subclasses(django_filters.FilterSet) for name in filterset.base_filters}
    return tuple(sorted(names))


_READS = re.compile(r"""(?:GET|POST|query_params|data)\.(?:get|getlist)\(\s*["']([^"']+)["']""")


@cache
def parameters_read_by_name() -> tuple[str, ...]:
    """Query and form parameters the views read by name (``request.GET.get("x")`` and the like), from the source."""
    root = Path(portal.__file__).parent
    names = set()
    for source in root.rglob("*.py"):
        names.update(_READS.findall(source.read_text()))
    return tuple(sorted(names))


@cache
def query_parameters() -> tuple[str, ...]:
    """What a fuzzed query string draws its names from: filters, pagination, ordering, and what views read."""
    return tuple(sorted({*filter_parameters(), *parameters_read_by_name(), "page", "ordering", "format", "ids"}))


def _serializer_fields(serializer_class) -> set[str]:
    try:
        return set(serializer_class().fields)
    except Exception:  # a serializer that needs a context or arguments to build its fields: its declared ones
        return set(getattr(serializer_class, "_declared_fields", {}))


@cache
def body_fields() -> tuple[str, ...]:
    """Every field name of the project's forms and serializers (the URL configuration imports them all)."""
    endpoints()
    names = set()
    for form in _subclasses(forms.BaseForm):
        names.update(form.base_fields)
    for serializer in _subclasses(serializers.BaseSerializer):
        names.update(_serializer_fields(serializer))
    return tuple(sorted(names))
