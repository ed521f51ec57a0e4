from django.urls import include, path

from portal import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("api/", include("portal.api.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("manage/", include("portal.web.admin_urls")),
    path("", include("portal.web.urls")),
]
