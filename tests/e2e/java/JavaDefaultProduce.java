// RocketMQ's own Java client with its defaults, as most applications run it: DefaultMQProducer, synchronous
// sends, a 3 s send timeout, 2 retries, a 30 s route poll (pollNameServerInterval). The e2e tests run it in a pod
// of the broker image (its lib/ has the client) beside the project's producer, to report what a default Java
// application sees during a fault. Compiled on the host against the pinned distribution's jars
// (tests/e2e/java_client.py).
//
// Usage: JavaDefaultProduce NAMESRV TOPIC KEY_PREFIX COUNT RATE
// Prints "first acknowledgement" once the first send is acknowledged, and at the end one JSON object, in the fields of `rocketmq-operator produce --json --report-keys` that the no-loss check
// and the pause figure read: sent, acknowledged, acknowledged_keys, failures (exception class -> count), ack_gaps
// (every pause of at least 1 s between acknowledgements: after, until, s; wall-clock seconds).

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

public final class JavaDefaultProduce {
    private JavaDefaultProduce() {}

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String prefix = args[2];
        int count = Integer.parseInt(args[3]);
        double rate = Double.parseDouble(args[4]);

        DefaultMQProducer producer = new DefaultMQProducer("java-default-produce");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        List<String> acked = new ArrayList<>();
        List<Double> ackEnds = new ArrayList<>();
        Map<String, Integer> failures = new TreeMap<>();
        long t0 = System.nanoTime();
        for (int seq = 0; seq < count; seq++) {
            long due = t0 + (long) (seq / rate * 1e9);
            long wait = due - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            String key = prefix + seq;
            Message message = new Message(topic, null, key, key.getBytes(StandardCharsets.UTF_8));
            try {
                SendResult result = producer.send(message);
                // Every status but SEND_OK means stored without the replicas' acknowledgement the group asks for.
                if (result.getSendStatus() == SendStatus.SEND_OK) {
                    if (acked.isEmpty()) {
                        System.out.println("first acknowledgement");  // the test waits for it before the fault
                        System.out.flush();
                    }
                    acked.add(key);
                    ackEnds.add(System.currentTimeMillis() / 1000.0);
                } else {
                    failures.merge(result.getSendStatus().name(), 1, Integer::sum);
                }
            } catch (Exception e) {
                failures.merge(e.getClass().getSimpleName(), 1, Integer::sum);
            }
        }
        producer.shutdown();

        StringBuilder out = new StringBuilder("{\"client\": \"rocketmq-client-java DefaultMQProducer, defaults\"");
        out.append(", \"sent\": ").append(count).append(", \"acknowledged\": ").append(acked.size());
        out.append(", \"failures\": {");
        String sep = "";
        for (Map.Entry<String, Integer> e : failures.entrySet()) {
            out.append(sep).append(quote(e.getKey())).append(": ").append(e.getValue());
            sep = ", ";
        }
        out.append("}, \"ack_gaps\": [");
        sep = "";
        for (int i = 1; i < ackEnds.size(); i++) {
            double gap = ackEnds.get(i) - ackEnds.get(i - 1);
            if (gap >= 1.0) {
                out.append(sep).append(String.format(
                    "{\"after\": %.3f, \"until\": %.3f, \"s\": %.3f}", ackEnds.get(i - 1), ackEnds.get(i), gap));
                sep = ", ";
            }
        }
        out.append("], \"acknowledged_keys\": [");
        sep = "";
        for (String key : acked) {
            out.append(sep).append(quote(key));
            sep = ", ";
        }
        out.append("]}");
        System.out.println(out);
    }
}
