/*
 * The Java client's DefaultLitePullConsumer draining a topic: the third column of `rocketmq-operator bench spark`,
 * the physical limit of a reader on this machine. Run in source-file mode against the pinned distribution's jars:
 *
 *   java -cp '<dist>/lib/*' LitePullRate.java NAMESRV TOPIC GROUP MESSAGES ROUNDS PULL_BATCH
 *
 * Round K uses the consumer group GROUP-K, which must exist on the masters (brokers run with
 * autoCreateSubscriptionGroup=false); being new, it starts at each queue's first offset (CONSUME_FROM_FIRST_OFFSET;
 * nothing is committed). Each round is a fresh consumer (same JVM, so later rounds run compiled code) assigned
 * every queue, polling until MESSAGES messages arrived. It digests every message as the Python tools do
 * (sha256(key + NUL + body) summed modulo 2^256) so the count and digest can be checked against the producer's,
 * and prints one JSON line per round: {"count": N, "elapsed_s": S, "digest": "<64 hex>"}.
 */

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Collection;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class LitePullRate {
    private static final BigInteger MODULUS = BigInteger.ONE.shiftLeft(256);
    private static final long ROUND_TIMEOUT_NS = 600_000_000_000L;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        long wanted = Long.parseLong(args[3]);
        int rounds = Integer.parseInt(args[4]);
        int pullBatch = Integer.parseInt(args[5]);
        for (int round = 0; round < rounds; round++) {
            DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group + "-" + round);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.setNamesrvAddr(namesrv);
            consumer.setAutoCommit(false);
            consumer.setPullBatchSize(pullBatch);
            consumer.setInstanceName("bench-litepull-" + round);
            consumer.start();
            try {
                long t0 = System.nanoTime();
                Collection<MessageQueue> queues = consumer.fetchMessageQueues(topic);
                consumer.assign(queues);
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                BigInteger sum = BigInteger.ZERO;
                long count = 0;
                while (count < wanted && System.nanoTime() - t0 < ROUND_TIMEOUT_NS) {
                    List<MessageExt> batch = consumer.poll(1000);
                    for (MessageExt message : batch) {
                        String key = message.getKeys() == null ? "" : message.getKeys();
                        sha.update(key.getBytes(StandardCharsets.UTF_8));
                        sha.update((byte) 0);
                        sha.update(message.getBody());
                        sum = sum.add(new BigInteger(1, sha.digest()));
                        count++;
                    }
                }
                double elapsed = (System.nanoTime() - t0) / 1e9;
                String digest = String.format("%064x", sum.mod(MODULUS));
                System.out.printf("{\"count\": %d, \"elapsed_s\": %.3f, \"digest\": \"%s\"}%n", count, elapsed, digest);
                System.out.flush();
            } finally {
                consumer.shutdown();
            }
        }
    }
}
