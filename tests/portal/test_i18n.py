"""Translations: every user-facing string of the portal has a Simplified Chinese translation, the committed compiled
catalogs are up to date, and each user sees the portal (and its validation messages) in the language they picked.

The catalogs live in portal/locale; ``make messages`` re-extracts and compiles them (GNU gettext's tools).
"""

import contextlib
import gettext
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse
from django.utils import translation

from portal.models import UserProfile
from portal.models.validation import validate_topic_name
from tests.support.factories import make_user

LOCALE_DIR = Path(settings.LOCALE_PATHS[0])
# Where the portal's translatable strings live (what `make messages` extracts from; stats/ has the chart ranges).
SOURCE_DIRS = ("portal", "stats", "templates")


def catalog_path(language: str, suffix: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"django.{suffix}"


def compiled(po: Path, mo: Path) -> dict:
    """The catalog msgfmt makes of ``po`` (as compilemessages runs it); untranslated and fuzzy entries are left out,
    as gettext leaves them out at run time."""
    subprocess.run(["msgfmt", "--check-format", "-o", str(mo), str(po)], check=True, capture_output=True)
    return read_mo(mo)


def read_mo(mo: Path) -> dict:
    with mo.open("rb") as file:
        return gettext.GNUTranslations(file)._catalog


def msgids(catalog: dict) -> set[str]:
    """The source strings of a compiled catalog (a plural entry counts once, under its singular msgid)."""
    keys = {key[0] if isinstance(key, tuple) else key for key in catalog}
    return keys - {""}  # the header


@pytest.fixture(scope="module")
def source_strings(tmp_path_factory) -> set[str]:
    """Every msgid makemessages extracts from the current source, from a copy of it (so that the committed
    catalogs stay untouched)."""
    root = tmp_path_factory.mktemp("source")
    base = Path(settings.BASE_DIR)
    for name in SOURCE_DIRS:
        shutil.copytree(base / name, root / name, ignore=shutil.ignore_patterns("locale", "__pycache__"))
    locale = root / "locale"
    with override_settings(LOCALE_PATHS=[locale]), contextlib.chdir(root):
        call_command("makemessages", locale=["en"], verbosity=0)
    extracted = locale / "en" / "LC_MESSAGES" / "django.po"
    # msgen copies each msgid into its msgstr, so that msgfmt keeps every entry
    subprocess.run(["msgen", "-o", str(extracted), str(extracted)], check=True, capture_output=True)
    return msgids(compiled(extracted, root / "django.mo"))


def test_every_string_of_the_portal_has_a_chinese_translation(source_strings, tmp_path):
    po = catalog_path("zh_Hans", "po")
    translated = msgids(compiled(po, tmp_path / "django.mo"))
    untranslated = sorted(source_strings - translated)
    assert not untranslated, (
        f"{len(untranslated)} strings have no Simplified Chinese translation (run `make messages`, then translate "
        f"them in {po}):\n" + "\n".join(untranslated)
    )


def test_the_chinese_catalog_has_no_fuzzy_entries():
    """makemessages marks strings it guessed from similar ones as fuzzy; gettext ignores them until reviewed."""
    fuzzy = re.findall(r"^#,.*\bfuzzy\b.*\n(?:#.*\n)*msgid (.*)$", catalog_path("zh_Hans", "po").read_text(), re.M)
    assert not fuzzy, "fuzzy entries to review:\n" + "\n".join(fuzzy)


@pytest.mark.parametrize("language", ["en", "zh_Hans"])
def test_the_committed_compiled_catalog_matches_its_source(language, tmp_path):
    expected = compiled(catalog_path(language, "po"), tmp_path / "django.mo")
    assert read_mo(catalog_path(language, "mo")) == expected, "run `make messages` to recompile the catalogs"


def signed_in(client, username: str, language: str):
    user = make_user(username)
    UserProfile.objects.create(user=user, language=language, time_zone="Asia/Shanghai")
    client.force_login(user)
    return client


def test_a_user_who_picked_chinese_sees_the_portal_in_chinese(client, db):
    page = signed_in(client, "li", "zh-hans").get(reverse("topic-list")).text
    assert '<html lang="zh-hans">' in page
    assert "申请 Topic" in page and "消费者组" in page and "没有符合条件的 Topic。" in page
    assert "Apply for a topic" not in page


def test_a_user_who_picked_english_sees_the_portal_in_english(client, db):
    page = signed_in(client, "emma", "en").get(reverse("topic-list")).text
    assert '<html lang="en">' in page
    assert "Apply for a topic" in page and "Consumer groups" in page and "No topic matches." in page


def test_validation_messages_come_out_in_the_active_language():
    """The messages are lazy: they are rendered in the language active when they are read."""
    with pytest.raises(ValidationError) as error:
        validate_topic_name("TBW102")
    with translation.override("zh-hans"):
        assert error.value.messages == ["TBW102 是 RocketMQ 系统 Topic 名称，不能使用。"]
    with translation.override("en"):
        assert error.value.messages == ["TBW102 is a RocketMQ system topic name and cannot be used."]


def test_password_rules_speak_chinese_too():
    from django.contrib.auth.password_validation import validate_password

    with translation.override("zh-hans"), pytest.raises(ValidationError) as error:
        validate_password("abc")

    assert "密码太短，至少需要 8 个字符。" in error.value.messages
