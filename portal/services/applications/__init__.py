"""Applications: the state machine through which business teams change what exists on a cluster.

``submit`` validates a request against RocketMQ's rules and today's registry and files it PENDING (portal admins
are notified). ``approve`` is the only path that changes a live cluster:

1. it claims the application with one conditional UPDATE (``state = pending`` and no live claim; see
   ``Application``'s docstring), so of two concurrent approvals, or an approval racing a rejection or cancellation,
   exactly one proceeds and the others get InvalidTransition. The claim is committed before the cluster is touched,
   and no database transaction is held open across the network calls;
2. it validates the request again against the registry as it is now (a name may have been taken, a topic may have
   gained subscribers), then acts on the cluster through ``cluster_ops`` (idempotent operations);
3. in one transaction it locks the row, checks the claim is still its own and the state still pending, creates,
   changes or deletes the registry rows, marks the application approved, writes the audit entries and notifies the
   applicant - all or nothing.

If step 2 or 3 fails, the claim is given back with ``last_error`` set (and ``attempts`` counted), the application
stays pending, nothing is recorded in the registry, and the error is raised (ClusterOperationError for the cluster,
ValidationError if the request is no longer valid). Approving again is safe: every cluster operation is an upsert
or an idempotent delete.

A new topic may come with the consumer groups that will read it (``consumer_groups`` in its payload, see
``topics``): one application, approved once, creating the topic and then its groups on the cluster and
all of them in the registry in the one transaction of step 3, so a failure on any group leaves no registry row.

One module per family of kinds (``topics``, ``consumer_groups``, ``producer_groups``, ``associations``, tied together
in ``kinds``), the shared checks (``checks``, ``entries``) and the state machine (``workflow``), whose four moves
and error are what callers use.
"""

from portal.services.applications.workflow import InvalidTransition, approve, cancel, reject, submit

__all__ = ["InvalidTransition", "approve", "cancel", "reject", "submit"]
