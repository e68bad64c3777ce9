package io.kraftcheck.elr;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.controller.ElrControllerHarness;
import org.apache.kafka.controller.ElrControllerHarness.Part;
import org.apache.kafka.controller.ElrControllerHarness.Reg;
import org.apache.kafka.controller.ElrControllerHarness.Result;
import org.apache.kafka.controller.ElrControllerHarness.State;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code java -jar kafka-harness-elr.jar serve}: one JSON command per stdin line, one JSON
 * answer per stdout line (README.md, "serve").  {@code version} prints Kafka's version.
 * The JSON codec of the controller state lives here; the controller driving lives in
 * {@link ElrControllerHarness}.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("version")) {
            System.out.println(kafkaVersion());
            return;
        }
        if (args.length != 1 || !args[0].equals("serve")) {
            System.err.println("usage: java -jar kafka-harness-elr.jar serve|version");
            System.exit(2);
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            n++;
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = handle(JSON.readTree(line));
            } catch (Exception e) {
                answer = JSON.createObjectNode();
                answer.put("ok", false);
                answer.put("fault", "command " + n + ": " + e);
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    static String kafkaVersion() {
        try (var in = Main.class.getResourceAsStream("/kafka-harness-elr.properties")) {
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("kafka.version");
        } catch (java.io.IOException | NullPointerException e) {
            throw new IllegalStateException("kafka-harness-elr.properties missing from the jar", e);
        }
    }

    static ObjectNode handle(JsonNode cmd) {
        String op = cmd.path("op").asText();
        ObjectNode ans = JSON.createObjectNode();
        if (op.equals("version")) {
            ans.put("ok", true);
            ans.put("version", kafkaVersion());
            return ans;
        }
        if (op.equals("initial")) {
            State s = ElrControllerHarness.initial(ints(cmd.get("replicas")), cmd.get("minIsr").asInt(),
                cmd.path("elrEnabled").asBoolean(true), cmd.path("uncleanElection").asBoolean(false));
            ans.put("ok", true);
            ans.set("state", encode(s));
            return ans;
        }
        State s = decode(cmd.get("state"));
        Result r = switch (op) {
            case "register" -> ElrControllerHarness.register(s, cmd.get("broker").asInt(),
                cmd.get("previousBrokerEpoch").asLong(), cmd.get("newEpoch").asLong());
            case "heartbeat" -> ElrControllerHarness.heartbeat(s, cmd.get("broker").asInt());
            case "fence" -> ElrControllerHarness.fence(s, cmd.get("broker").asInt());
            case "controlledShutdown" -> ElrControllerHarness.controlledShutdown(s, cmd.get("broker").asInt());
            case "alterPartition" -> ElrControllerHarness.alterPartition(s, cmd.get("broker").asInt(),
                cmd.get("brokerEpoch").asLong(), cmd.get("leaderEpoch").asInt(), cmd.get("partitionEpoch").asInt(),
                ints(cmd.get("isr")), longs(cmd.get("isrEpochs")));
            case "setMinIsr" -> ElrControllerHarness.setMinIsr(s, cmd.get("minIsr").asInt());
            case "build" -> ElrControllerHarness.build(s, ints(cmd.get("targetIsr")),
                ints(cmd.path("uncleanShutdown")), ints(cmd.get("acceptable")),
                cmd.path("election").asText("ONLINE"), cmd.path("useLastKnownLeader").asBoolean(true));
            default -> throw new IllegalArgumentException("unknown op '" + op + "'");
        };
        ans.put("ok", true);
        ans.put("error", r.error());
        ans.set("state", encode(r.state()));
        ArrayNode recs = ans.putArray("records");
        r.records().forEach(recs::add);
        return ans;
    }

    static int[] ints(JsonNode a) {
        int[] r = new int[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).asInt();
        return r;
    }

    static long[] longs(JsonNode a) {
        long[] r = new long[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).asLong();
        return r;
    }

    static ArrayNode arr(int[] a) {
        ArrayNode n = JSON.createArrayNode();
        for (int x : a) n.add(x);
        return n;
    }

    static ObjectNode encode(State s) {
        ObjectNode n = JSON.createObjectNode();
        n.set("replicas", arr(s.replicas()));
        n.put("minIsr", s.minIsr());
        n.put("elrEnabled", s.elrEnabled());
        n.put("uncleanElection", s.uncleanElection());
        ArrayNode regs = n.putArray("regs");
        for (Reg r : s.regs()) {
            ObjectNode o = regs.addObject();
            o.put("id", r.id());
            o.put("epoch", r.epoch());
            o.put("fenced", r.fenced());
            o.put("inControlledShutdown", r.inControlledShutdown());
        }
        Part p = s.part();
        ObjectNode o = n.putObject("part");
        o.put("leader", p.leader());
        o.put("leaderEpoch", p.leaderEpoch());
        o.put("partitionEpoch", p.partitionEpoch());
        o.set("isr", arr(p.isr()));
        o.set("elr", arr(p.elr()));
        o.set("lastKnownElr", arr(p.lastKnownElr()));
        o.put("recovering", p.recovering());
        return n;
    }

    static State decode(JsonNode n) {
        if (n == null) throw new IllegalArgumentException("missing field 'state'");
        List<Reg> regs = new ArrayList<>();
        for (JsonNode r : n.get("regs")) {
            regs.add(new Reg(r.get("id").asInt(), r.get("epoch").asLong(), r.get("fenced").asBoolean(),
                r.path("inControlledShutdown").asBoolean(false)));
        }
        JsonNode p = n.get("part");
        return new State(ints(n.get("replicas")), n.get("minIsr").asInt(), n.path("elrEnabled").asBoolean(true),
            n.path("uncleanElection").asBoolean(false), regs,
            new Part(p.get("leader").asInt(), p.get("leaderEpoch").asInt(), p.get("partitionEpoch").asInt(),
                ints(p.get("isr")), ints(p.get("elr")), ints(p.get("lastKnownElr")), p.path("recovering").asBoolean(false)));
    }
}
