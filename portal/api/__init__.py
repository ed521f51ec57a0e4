"""The REST API under ``/api/v1/`` (DRF), its token endpoint, and the OpenAPI schema and docs (``/api/schema/``,
``/api/docs/``, ``/api/redoc/``, all assets served from static files).

Viewsets parse a request, call ``portal.services``, and render; who may see or do what is asked of
``portal.access``. Status codes, the same on every endpoint:

- 401 with ``WWW-Authenticate: Token``: no credentials (or a wrong token) where a login is needed;
- 404: the object is not among those the user may see (``visible_to``), or does not exist;
- 403: the user sees it but may not do this, or the endpoint is for portal admins only; also a session
  request that fails Django's CSRF check (token clients need no CSRF token);
- 400: field errors, keyed by field (an application's payload errors nested under ``payload``, errors about the
  whole request under ``non_field_errors``); malformed JSON; unknown filter values;
- 409: a decision on an application that is no longer pending (or is being approved right now);
- 502 ``{"detail": ...}``: the cluster did not do what an approval asked; the application stays pending with the
  error kept, and approving again is safe.
"""
