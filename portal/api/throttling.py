"""The API's request rates (REST_FRAMEWORK's DEFAULT_THROTTLE_RATES): ``user`` per signed-in user, ``anon`` per
address for everyone else. Over the rate DRF answers 429 with Retry-After.

Machine credentials are exempt: a producer or consumer group's SDK clients report with its token (``request.auth``
is the ProducerToken or ConsumerToken while the user stays anonymous), thousands of reports a second across a fleet
that may sit behind one address; their endpoints accept nothing else, and the owning team revokes a misbehaving token.
"""

from django.core.cache import caches
from rest_framework import throttling

from portal.models.client_tokens import ClientToken


def is_machine_credential(auth) -> bool:
    return isinstance(auth, ClientToken)


class UserRateThrottle(throttling.UserRateThrottle):
    """Signed-in users only (DRF's would also count anonymous callers by address, at the users' rate)."""

    cache = caches["throttle"]

    def get_cache_key(self, request, view):
        if not request.user or not request.user.is_authenticated:
            return None
        return super().get_cache_key(request, view)


class AnonRateThrottle(throttling.AnonRateThrottle):
    cache = caches["throttle"]

    def get_cache_key(self, request, view):
        if is_machine_credential(request.auth):
            return None
        return super().get_cache_key(request, view)
