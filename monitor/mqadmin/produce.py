"""sendMessage: send one message as a Java producer does (monitor.messages.send) and print the send result the way
mqadmin does, with the store's id as well, so that the message can be looked up at once with queryMsgById or
queryMsgByUniqueKey."""

from __future__ import annotations

import argparse

from monitor.messages.send import SendResult, send_message
from monitor.mqadmin.common import MQAdminError, SubCommand
from monitor.mqadmin.output import render_table
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin


def send(admin: MQAdmin, args: argparse.Namespace) -> SendResult:
    """The body is the -p text in UTF-8; -k is Java's keys string (several keys separated by spaces)."""
    if args.queue_id is not None and args.broker_name is None:
        raise MQAdminError("Broker name must be set if the queue is chosen!")
    queue = b.MessageQueue(args.topic, args.broker_name, args.queue_id) if args.queue_id is not None else None
    keys = args.keys.split() if args.keys else ()
    return send_message(admin, args.topic, args.body.encode("utf-8"), tags=args.tags, keys=keys, queue=queue)


def render_send(result: SendResult, args: argparse.Namespace) -> str:
    return render_table(
        ["#Broker Name", "#QID", "#Send Result", "#MsgId", "#Offset Message ID"],
        [[result.broker_name, result.queue_id, result.status, result.msg_id, result.offset_msg_id]],
    )


def _send_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="Topic name")
    parser.add_argument("-p", "--body", required=True, help="UTF-8 string format of the message body")
    parser.add_argument("-k", "--key", dest="keys", help="Message keys (several separated by spaces)")
    parser.add_argument("-c", "--tags", help="Message tags")
    parser.add_argument("-b", "--broker", dest="broker_name", help="Send message to target broker")
    parser.add_argument("-i", "--qid", dest="queue_id", type=int, help="Send message to target queue")


COMMANDS = [SubCommand("sendMessage", "Send a message", _send_args, send, render_send)]
