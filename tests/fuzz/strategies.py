"""Hypothesis strategies for hostile requests: a method the endpoint serves, path values (real ids and slugs of the
fixture world, and ids no database holds), a query string of the project's own parameter names with hostile values,
and a body - JSON of any shape, JSON-looking junk, form fields with hostile values, broken multipart, or bytes under
a content type that does not match them."""

import json
import math
from dataclasses import dataclass, field
from urllib.parse import quote

from hypothesis import strategies as st

from tests.fuzz.targets import Endpoint, PathParam, body_fields, query_parameters

HUGE_INTS = [2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, -(10**30)]
SPECIAL_FLOATS = [math.inf, -math.inf, math.nan, 1e308, -0.0, 5e-324]
# Strings that have broken parsers before: number look-alikes that int() or the database may refuse, NUL and control
# characters, a lone surrogate (cannot be encoded as UTF-8), Unicode digits that str.isdigit() accepts and int()
# does not, bidi and zero-width characters, markup, and a long name.
HOSTILE_STRINGS = [
    "",
    " ",
    "0",
    "-1",
    str(2**63),
    str(2**64),
    str(10**30),
    "1e400",
    "-1e400",
    "NaN",
    "inf",
    "0x10",
    "1_000",
    "²",
    "١٢",
    "１２",
    "\x00",
    "a\x00b",
    "\x01\x1f\x7f",
    "\ud800",
    "a\udfffb",
    "\u202etxt.exe",
    "\u200b",
    "<script>alert(1)</script>",
    "'; DROP TABLE portal_topic; --",
    "%00",
    "../../etc/passwd",
    "true",
    "null",
    "[]",
    "{}",
    "2024-02-30",
    "99999-01-01",
    "0000-00-00",
    "2024-01-01T00:00:00+99:00",
    "2024-13-01T25:61:61Z",
    "-",
    ",",
    "__",
    "x" * 5000,
    "名" * 300,
]
HOSTILE_DATES = ["2024-02-29", "2024-02-30", "1900-01-01", "0001-01-01", "9999-12-31", "10000-01-01", "2024-1-1"]
HOSTILE_ORDERINGS = ["name", "-name", "pk", "-created_at", "nonexistent", "-", "?", "name,-pk", "team__name",
                     "applicant__password", "password", "__class__"]  # fmt: skip


def text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Any text, lone surrogates and control characters included."""
    return st.text(st.characters(codec=None, exclude_categories=()), max_size=max_size)


def hostile_text(pool: list[str]) -> st.SearchStrategy[str]:
    """Mostly the known troublemakers and the fixture world's real names and ids, sometimes anything."""
    return st.one_of(st.sampled_from(HOSTILE_STRINGS), st.sampled_from(pool), text())


def hostile_int() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(HUGE_INTS), st.integers(-3, 12), st.integers())


def scalars(pool: list[str]) -> st.SearchStrategy:
    return st.one_of(
        st.none(),
        st.booleans(),
        hostile_int(),
        st.sampled_from(SPECIAL_FLOATS),
        st.floats(),
        hostile_text(pool),
    )


def json_values(pool: list[str], keys: st.SearchStrategy[str]) -> st.SearchStrategy:
    """JSON of any shape, keyed mostly by the project's field names so the validators behind them are reached."""
    return st.recursive(
        scalars(pool),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
        max_leaves=12,
    )


def field_names() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(body_fields()), st.sampled_from(body_fields()).map(str.upper), text(12))


def deeply_nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


RAW_JSON_JUNK = [
    b"",
    b"{",
    b'{"name": }',
    b"[" * 100_000,
    deeply_nested(20_000),
    b'{"name": NaN, "queue_nums": Infinity}',
    b'{"queue_nums": 1e400}',
    b'{"queue_nums": 100000000000000000000000000000000000000}',
    b'{"name": "\\ud800"}',
    b'{"name": "\\u0000"}',
    b'{"name": "a", "name": "b"}',
    b"\xff\xfe\x00{",
    b'\xef\xbb\xbf{"name": "bom"}',
    b"null",
    b"[]",
    b'"text"',
    b"12",
]
CONTENT_TYPES = [
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=BoUnDaRy",
    "multipart/form-data",
    "text/plain",
    "application/xml",
    "application/json; charset=latin-1",
    "application/json; charset=nonexistent",
    "",
]
MULTIPART_JUNK = [
    b'--BoUnDaRy\r\nContent-Disposition: form-data; name="name"\r\n\r\nvalue\r\n',  # never closed
    b'--BoUnDaRy\r\nContent-Disposition: form-data; name="f"; filename="../../x"\r\n\r\n\x00\x01\r\n--BoUnDaRy--',
    b"--BoUnDaRy\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--BoUnDaRy--\r\n",
    b"--BoUnDaRy--\r\n",
    b"garbage without any boundary",
]


@dataclass
class FuzzRequest:
    """One request: a method, a path, a raw query string, and a body with its content type (None: no body)."""

    method: str
    path: str
    query: str = ""
    body: bytes | None = None
    content_type: str = ""
    headers: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path


def quoted(value) -> str:
    """A value as a URL part or query value; lone surrogates go as the bytes Python would write for them."""
    return quote(str(value).encode("utf-8", "surrogatepass"), safe="")


# Ids in a URL: numbers no table holds (the largest beyond a 64-bit column), and, where the pattern takes any text
# (the API router's ``[^/.]+``), numbers int() or the database would refuse.
ODD_IDS = ["0", str(2**63 - 1), str(2**63), str(2**64), str(10**30), "00001"]
ODD_TEXT_IDS = ["-1", "1.5", "abc", "²", "١", "1e3", " 1", "0x1"]


def path_value(param: PathParam, ids: list[int], slugs: list[str]) -> st.SearchStrategy[str]:
    """A value for one URL part: real ids and slugs most often, so the views reach real objects."""
    if param.kind == "int" or param.name.endswith("pk"):
        odd = ODD_IDS if param.kind == "int" else ODD_IDS + ODD_TEXT_IDS
        real = st.one_of(st.integers(1, 3), st.sampled_from(ids)).map(str)  # every table's first rows, or any row
        return st.one_of(real, real, st.sampled_from(odd), st.integers(min_value=0).map(str))
    return st.one_of(st.sampled_from(slugs), st.sampled_from(slugs), hostile_text(slugs))


def _query_value(name: str, pool: list[str]) -> st.SearchStrategy[str]:
    if name == "ordering":
        return st.sampled_from(HOSTILE_ORDERINGS)
    if "after" in name or "before" in name or name in ("window", "minute"):
        return st.one_of(st.sampled_from(HOSTILE_DATES), hostile_text(pool))
    return st.one_of(hostile_text(pool), hostile_int().map(str))


@st.composite
def query_strings(draw, pool: list[str]) -> str:
    """A query string of the project's parameter names (repeated names and broken percent-encoding included)."""
    names = draw(st.lists(st.sampled_from(query_parameters()), max_size=4))
    pairs = [(name, draw(_query_value(name, pool))) for name in names]
    query = "&".join(f"{quoted(name)}={quoted(value)}" for name, value in pairs)
    junk = draw(st.sampled_from(["", "", "", "&%ZZ=%FF%FE", "&page=%ED%A0%80", "&=x", "&&&", "&q"]))
    return query + junk


@st.composite
def json_bodies(draw, pool: list[str]) -> tuple[bytes, str]:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(st.sampled_from(RAW_JSON_JUNK)), "application/json"
    if choice == 1:  # an object of the project's field names, the most likely to reach a validator
        value = draw(st.dictionaries(st.sampled_from(body_fields()), json_values(pool, field_names()), max_size=6))
    else:
        value = draw(json_values(pool, field_names()))
    content_type = draw(st.sampled_from(["application/json", "application/json", *CONTENT_TYPES]))
    return json.dumps(value, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"), content_type


@st.composite
def form_bodies(draw, pool: list[str]) -> tuple[bytes, str]:
    """Form fields of the project's names (formset-prefixed too) with hostile values, urlencoded or multipart."""
    prefixes = ["", "", "sub-", "sub-0-", "consumer_lag-", "form-"]
    keys = st.builds(lambda p, n: p + n, st.sampled_from(prefixes), st.one_of(st.sampled_from(body_fields()), text(8)))
    keys = st.one_of(keys, st.sampled_from(["sub-TOTAL_FORMS", "sub-INITIAL_FORMS", "sub-MAX_NUM_FORMS"]))
    values = st.one_of(hostile_text(pool), hostile_int().map(str))
    pairs = draw(st.lists(st.tuples(keys, values), max_size=8))
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(st.sampled_from(MULTIPART_JUNK)), "multipart/form-data; boundary=BoUnDaRy"
    if choice == 1:
        lines = [
            b'--BoUnDaRy\r\nContent-Disposition: form-data; name="' + _raw(k) + b'"\r\n\r\n' + _raw(v) + b"\r\n"
            for k, v in pairs
        ]
        return b"".join(lines) + b"--BoUnDaRy--\r\n", "multipart/form-data; boundary=BoUnDaRy"
    body = "&".join(f"{quoted(k)}={quoted(v)}" for k, v in pairs).encode()
    content_type = draw(st.sampled_from(["application/x-www-form-urlencoded"] * 3 + CONTENT_TYPES))
    return body, content_type


def _raw(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


@st.composite
def requests(draw, endpoint: Endpoint, *, ids: list[int], slugs: list[str], pool: list[str]) -> FuzzRequest:
    """One hostile request to ``endpoint``."""
    method = draw(st.sampled_from(endpoint.methods))
    path = "/" + "".join(
        part if isinstance(part, str) else quoted(draw(path_value(part, ids, slugs))) for part in endpoint.parts
    )
    query = draw(query_strings(pool))
    request = FuzzRequest(method, path, query)
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        bodies = json_bodies(pool) if endpoint.api else st.one_of(form_bodies(pool), json_bodies(pool))
        request.body, request.content_type = draw(bodies)
    if endpoint.api and draw(st.integers(0, 9)) == 0:
        request.headers["HTTP_AUTHORIZATION"] = draw(
            st.sampled_from(["Token", "Token a b", "Token \x00", "Token " + "f" * 40, "Producer x", "Basic ???"])
        )
    if draw(st.integers(0, 9)) == 0:
        request.headers["HTTP_ACCEPT_LANGUAGE"] = draw(st.sampled_from(["zh-hans", "xx", "*;q=nan", "en;q=2"]))
    return request
