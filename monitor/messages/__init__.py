"""Finding messages, showing them and acting on them (resend, offsets, group settings), on the wire client alone.

Pure Python on :class:`monitor.remoting.admin.MQAdmin`, one job per module; the portal, its API and the mqadmin
CLI all use these, so a message reads and behaves the same wherever it is looked at.
"""
