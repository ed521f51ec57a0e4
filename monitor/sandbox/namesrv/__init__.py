"""The sandbox name server: RocketMQ 4.9.4's name server, in memory, on the sandbox RemotingServer.

Clients find brokers only through the name server, so the admin client and the C++ client must get exactly what a
real 4.9.4 name server sends. This module ports its behaviour, not just its message shapes:

* DefaultRequestProcessor: every request code the real one handles, with the same response headers (an empty
  ``extFields`` where Java builds a response from a header class whose fields are all null), remarks and error
  codes; GET_ROUTEINFO_BY_TOPIC answers standard JSON to requests of version >= 401 (V4_9_4) or with
  acceptStandardJsonOnly=true and plain fastjson, with unquoted integer map keys, to older clients (the C++ client
  sends 63); any other code gets no answer at all, so the client times out.
* RouteInfoManager: queue data per broker name comes from the topic configs a master registers (slaves only add
  their address); a slave learns its master's address and HA address from the registration response; a broker is
  removed the moment its connection closes, when it unregisters, or once it has not registered for 120 s. Its
  quirks are kept too: topics a master stops registering stay until DELETE_TOPIC_IN_NAMESRV, and a broker name
  disappears only when its last member does.
* KVConfigManager: namespaced key/value config; ORDER_TOPIC_CONFIG entries travel in REGISTER_BROKER responses
  and, with orderMessageEnable, as a route's orderTopicConf. Nothing is written to disk.
* Configuration: GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG Properties text with the real key set and order;
  listenPort is the port actually bound, serverChannelMaxIdleTimeSeconds closes idle connections accepted after it
  is set, orderMessageEnable switches orderTopicConf; values that do not parse are ignored, as MixAll does.

Bodies list map entries in the order the Java HashMaps behind them iterate (javahash.java_hashmap_order), so even
the bytes match a real name server holding the same data.

One module per job: ``routes`` (RouteInfoManager and the registration body), ``config`` (KVConfigManager and the
name server's properties) and ``server`` (the request processor).
"""

from monitor.sandbox.namesrv.server import NameServer

__all__ = ["NameServer"]
