from portal.models.applications import Application, ApplicationKind, ApplicationState
from portal.models.audit import AuditEntry
from portal.models.cluster import Broker, BrokerRole, Cluster, NameServer
from portal.models.notifications import Notification
from portal.models.people import Membership, Team, TeamRole, UserProfile
from portal.models.registry import (
    AssociationRole,
    ConsumerGroup,
    MessageModel,
    Origin,
    ProducerGroup,
    RegistryState,
    Subscription,
    Topic,
    TopicAssociation,
)

__all__ = [
    "Application",
    "ApplicationKind",
    "ApplicationState",
    "AssociationRole",
    "AuditEntry",
    "Broker",
    "BrokerRole",
    "Cluster",
    "ConsumerGroup",
    "Membership",
    "MessageModel",
    "NameServer",
    "Notification",
    "Origin",
    "ProducerGroup",
    "RegistryState",
    "Subscription",
    "Team",
    "TeamRole",
    "Topic",
    "TopicAssociation",
    "UserProfile",
]
