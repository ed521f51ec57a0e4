"""The admin pages, mounted under /manage/ (URL names as listed in the project notes; reverse them)."""

from django.urls import path

from portal.web import admin_views as views
from portal.web.views import jobs, metrics_tokens, warnings

urlpatterns = [
    path("applications/", views.approval_queue, name="approval-queue"),
    path("applications/<int:pk>/approve/", views.application_approve, name="application-approve"),
    path("applications/<int:pk>/reject/", views.application_reject, name="application-reject"),
    path("clusters/", views.cluster_list, name="cluster-list"),
    path("clusters/new/", views.cluster_create, name="cluster-create"),
    path("clusters/<int:pk>/", views.cluster_detail, name="cluster-detail"),
    path("clusters/<int:pk>/sync/", views.cluster_sync, name="cluster-sync"),
    path("unowned/", views.unowned_list, name="unowned-list"),
    path("unowned/<slug:kind>/<int:pk>/adopt/", views.entry_adopt, name="entry-adopt"),
    path("audit/", views.audit_log, name="audit-log"),
    path("jobs/", jobs.job_run_list, name="job-run-list"),
    path("metrics/tokens/", metrics_tokens.metrics_token_list, name="metrics-token-list"),
    path("metrics/tokens/issue/", metrics_tokens.metrics_token_issue, name="metrics-token-issue"),
    path("metrics/tokens/<int:pk>/revoke/", metrics_tokens.metrics_token_revoke, name="metrics-token-revoke"),
    path("teams/new/", views.team_create, name="team-create"),
    path("users/", views.user_list, name="user-list"),
    path("users/new/", views.user_create, name="user-create"),
    path("users/<int:pk>/", views.user_detail, name="user-detail"),
    path("warnings/thresholds/", warnings.warning_defaults, name="warning-defaults"),
]
