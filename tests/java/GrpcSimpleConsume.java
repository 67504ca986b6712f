import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * RocketMQ 5's Java gRPC client (rocketmq-client-java) with its defaults, as an application reads: a SimpleConsumer
 * of GROUP on TOPIC through the proxy endpoint, receiving up to 32 messages at a time invisible for 20 s, and acking
 * each once it has printed it ("got KEY MESSAGE_ID"; an ack that fails is printed "ackfail KEY ERROR" and the message
 * comes back after its invisible time). It stops once every key listed in EXPECTED_FILE (one per line) was received,
 * or nothing arrived for IDLE_S seconds; then prints "done".
 *
 * Usage: GrpcSimpleConsume ENDPOINT TOPIC GROUP IDLE_S EXPECTED_FILE
 */
public final class GrpcSimpleConsume {
    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        long idleMillis = (long) (Double.parseDouble(args[3]) * 1000);
        Set<String> expected = new HashSet<>(Files.readAllLines(Paths.get(args[4])));
        expected.remove("");
        Set<String> seen = new HashSet<>();
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder().setEndpoints(endpoint).build();
        // A long poll shorter than the idle window, so that an idle topic ends the loop on time.
        Duration awaitDuration = Duration.ofMillis(Math.max(1000, Math.min(20_000, idleMillis / 2)));
        try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
                .setClientConfiguration(configuration)
                .setConsumerGroup(group)
                .setAwaitDuration(awaitDuration)
                .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
                .build()) {
            long last = System.nanoTime();
            while (!(!expected.isEmpty() && seen.containsAll(expected))
                    && (System.nanoTime() - last) / 1_000_000 < idleMillis) {
                List<MessageView> messages;
                try {
                    messages = consumer.receive(32, Duration.ofSeconds(20));
                } catch (Exception e) {
                    System.out.println("receivefail " + e.getClass().getSimpleName() + ": " + e.getMessage());
                    Thread.sleep(200);
                    continue;
                }
                for (MessageView message : messages) {
                    for (String key : message.getKeys()) {
                        seen.add(key);
                        System.out.println("got " + key + " " + message.getMessageId());
                    }
                    try {
                        consumer.ack(message);
                    } catch (Exception e) {
                        System.out.println("ackfail " + String.join(",", message.getKeys()) + " " + e.getMessage());
                    }
                }
                if (!messages.isEmpty()) {
                    last = System.nanoTime();
                }
                System.out.flush();
            }
        }
        System.out.println("done");
    }
}
