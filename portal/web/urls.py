"""The business pages (the admin pages are in admin_urls, mounted under /manage/)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from portal.web.views import applications, monitoring, people, registry

urlpatterns = [
    path("", people.dashboard, name="dashboard"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="portal/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", people.profile, name="profile"),
    path("profile/language/", people.profile_language, name="profile-language"),
    path("topics/", registry.topic_list, name="topic-list"),
    path("topics/new/", applications.apply_topic, name="apply-topic"),
    path("topics/<int:pk>/", registry.topic_detail, name="topic-detail"),
    path("topics/<int:pk>/change/", applications.topic_apply_change, name="topic-apply-change"),
    path("topics/<int:pk>/delete/", applications.topic_apply_delete, name="topic-apply-delete"),
    path("topics/<int:pk>/associate/", applications.topic_associate, name="topic-associate"),
    path("consumer-groups/", registry.consumer_group_list, name="consumer-group-list"),
    path("consumer-groups/new/", applications.apply_consumer_group, name="apply-consumer-group"),
    path("consumer-groups/<int:pk>/", registry.consumer_group_detail, name="consumer-group-detail"),
    path(
        "consumer-groups/<int:pk>/delete/",
        applications.consumer_group_apply_delete,
        name="consumer-group-apply-delete",
    ),
    path("producer-groups/new/", applications.apply_producer_group, name="apply-producer-group"),
    path("producer-groups/<int:pk>/", registry.producer_group_detail, name="producer-group-detail"),
    path(
        "producer-groups/<int:pk>/delete/",
        applications.producer_group_apply_delete,
        name="producer-group-apply-delete",
    ),
    path("registry/<slug:kind>/<int:pk>/description/", registry.entry_description, name="entry-description"),
    path("applications/", applications.application_list, name="application-list"),
    path("applications/<int:pk>/", applications.application_detail, name="application-detail"),
    path("applications/<int:pk>/cancel/", applications.application_cancel, name="application-cancel"),
    path("notifications/", people.notification_list, name="notification-list"),
    path("teams/", people.team_list, name="team-list"),
    path("teams/<int:pk>/", people.team_detail, name="team-detail"),
    path("teams/<int:pk>/members/add/", people.team_member_add, name="team-member-add"),
    path("teams/<int:pk>/members/remove/", people.team_member_remove, name="team-member-remove"),
    path("brokers/<int:pk>/", monitoring.broker_detail, name="broker-detail"),
    path("servers/<str:host>/", monitoring.server_detail, name="server-detail"),
    path("lagging/", monitoring.lagging, name="lagging"),
]
