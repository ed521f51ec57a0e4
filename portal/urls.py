from django.contrib import admin
from django.urls import include, path

from portal import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include("portal.api.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("portal.web.urls")),
]
