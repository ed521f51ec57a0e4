/*
 * Traced traffic from the real Java client (rocketmq-client of the release on the classpath), for
 * tests/real/test_trace_real.py: a producer and a push consumer with message trace switched on (enableMsgTrace),
 * writing their Pub, SubBefore, SubAfter and EndTransaction records to the trace topic TRACE_TOPIC (a custom one:
 * RMQ_SYS_TRACE_TOPIC is a system topic only a broker with traceTopicEnable creates).
 *
 * Usage: java -cp 'lib/*' TraceTraffic.java NAMESRV TOPIC PRODUCER_GROUP CONSUMER_GROUP COUNT TRACE_TOPIC
 * Sends COUNT messages (keys KEY_0.., tag TagA) and one transactional message (committed by its local transaction),
 * consumes them all in CONSUMER_GROUP, where the message of key KEY_1 is answered RECONSUME_LATER the first time
 * (so it is consumed twice, the second time with reconsumeTimes 1). Prints, one per line:
 *   SENT msgId offsetMsgId keys       for each send
 *   TRANSACTION msgId                 for the transactional send
 *   CONSUMED msgId reconsumeTimes     for each consume attempt
 * then waits for the trace dispatchers to write what they hold, and shuts everything down.
 */

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TraceTraffic {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String producerGroup = args[2];
        String consumerGroup = args[3];
        int count = Integer.parseInt(args[4]);
        String traceTopic = args[5];

        DefaultMQProducer producer = new DefaultMQProducer(producerGroup, true, traceTopic);
        producer.setNamesrvAddr(namesrv);
        producer.start();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagA", "KEY_" + i, ("traced " + i).getBytes(StandardCharsets.UTF_8));
            SendResult sent = producer.send(msg);
            System.out.println("SENT " + sent.getMsgId() + " " + sent.getOffsetMsgId() + " KEY_" + i);
        }

        TransactionMQProducer transactional = new TransactionMQProducer(null, producerGroup + "_tx", null, true, traceTopic);
        transactional.setNamesrvAddr(namesrv);
        transactional.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        transactional.start();
        Message txMsg = new Message(topic, "TagTx", "KEY_TX", "transactional".getBytes(StandardCharsets.UTF_8));
        TransactionSendResult txSent = transactional.sendMessageInTransaction(txMsg, null);
        System.out.println("TRANSACTION " + txSent.getMsgId());
        System.out.flush();

        int attempts = count + 2; // every message once, KEY_1 twice, the transactional one once
        CountDownLatch consumed = new CountDownLatch(attempts);
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(consumerGroup, true, traceTopic);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                synchronized (System.out) {
                    System.out.println("CONSUMED " + msg.getMsgId() + " " + msg.getReconsumeTimes());
                    System.out.flush();
                }
                consumed.countDown();
                if ("KEY_1".equals(msg.getKeys()) && failedOnce.add(msg.getMsgId())) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean all = consumed.await(120, TimeUnit.SECONDS);
        Thread.sleep(5000); // the trace dispatchers send their batches asynchronously
        consumer.shutdown();
        transactional.shutdown();
        producer.shutdown();
        if (!all) {
            System.err.println("only " + (attempts - consumed.getCount()) + " of " + attempts + " consume attempts");
            System.exit(1);
        }
        System.exit(0);
    }
}
