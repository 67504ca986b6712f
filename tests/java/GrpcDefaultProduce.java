import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * RocketMQ 5's Java gRPC client (rocketmq-client-java) with its defaults, as an application builds it: a Producer
 * for one topic through the proxy endpoint, COUNT keyed messages ("PREFIX-SEQ"), one synchronous send at a time.
 * Prints one line per send, "ok KEY MESSAGE_ID" or "fail KEY ERROR", then "done".
 *
 * Usage: GrpcDefaultProduce ENDPOINT TOPIC PREFIX COUNT
 */
public final class GrpcDefaultProduce {
    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String prefix = args[2];
        int count = Integer.parseInt(args[3]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder().setEndpoints(endpoint).build();
        try (Producer producer = provider.newProducerBuilder()
                .setClientConfiguration(configuration)
                .setTopics(topic)
                .build()) {
            for (int seq = 0; seq < count; seq++) {
                String key = prefix + "-" + seq;
                Message message = provider.newMessageBuilder()
                        .setTopic(topic)
                        .setKeys(key)
                        .setBody(("java-grpc " + key).getBytes(StandardCharsets.UTF_8))
                        .build();
                try {
                    SendReceipt receipt = producer.send(message);
                    System.out.println("ok " + key + " " + receipt.getMessageId());
                } catch (Exception e) {
                    System.out.println("fail " + key + " " + e.getClass().getSimpleName() + ": " + e.getMessage());
                }
                System.out.flush();
            }
        }
        System.out.println("done");
    }
}
