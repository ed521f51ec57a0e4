"""Messages in the portal: searches run in the background into stored hits (``searches``), a message opened for
viewing with its body behind the body permission and every body view audited (``bodies``), the shared runner of
long message operations item by item (``items``), the offset-reset preview and operation progress the forms show
(``operations``), and an admin's direct action (``direct``: submit and approve in one call). Operations that change
a cluster go through applications (``portal.services.applications.messages``, ``consumer_offsets``,
``consumer_group_settings``); all of them reach the cluster through ``monitor.messages`` over one wire client
(``wire``)."""
