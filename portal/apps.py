from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self) -> None:
        # Personal API tokens end when their owner's password changes or the account is deactivated.
        from portal.services import api_tokens  # noqa: F401 (connects its signal receivers)
