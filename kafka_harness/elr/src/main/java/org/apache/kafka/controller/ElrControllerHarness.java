/*
 * kraftcheck KIP-966 harness.  This class lives in org.apache.kafka.controller because the
 * controller paths it drives (ReplicationControlManager.handleBroker*, processBrokerHeartbeat,
 * alterPartition, ClusterControlManager.registerBroker's shutdown handler,
 * ConfigurationControlManager.incrementalAlterConfig) are package-private.  It is not part of
 * Apache Kafka.
 *
 * One job: build Kafka's real controller managers for one partition (topic "t", partition 0,
 * every broker a replica) from a given state, apply ONE controller input through Kafka's own
 * code path, replay every record Kafka returns (as QuorumController does), and read the
 * resulting state back.  Stateless from the caller's point of view: the same state and input
 * give the same records and the same resulting state (the caller -- the Python side -- keeps
 * the state, so its pure state machines stay pure).
 */
package org.apache.kafka.controller;

import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.ClearElrRecord;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.EligibleLeaderReplicasVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

public final class ElrControllerHarness {
    public static final String TOPIC = "t";
    public static final Uuid TOPIC_ID = new Uuid(0x6b72616674636865L, 0x636b2d656c720001L);
    static final String CLUSTER_ID = "kraftcheck-elr-cluster";

    /** A broker registration as the caller sees it. */
    public record Reg(int id, long epoch, boolean fenced, boolean inControlledShutdown) { }

    /** The partition record as the caller sees it (Kafka's PartitionRegistration fields). */
    public record Part(int leader, int leaderEpoch, int partitionEpoch, int[] isr, int[] elr,
                       int[] lastKnownElr, boolean recovering) { }

    /** The whole controller state for one partition. */
    public record State(int[] replicas, int minIsr, boolean elrEnabled, boolean uncleanElection,
                        List<Reg> regs, Part part) { }

    /** The answer to one input: the new state, Kafka's records, and the request's error. */
    public record Result(State state, List<String> records, String error) { }

    /** A clock that never moves: nothing here depends on time (session expiry is an input). */
    static final class FixedTime implements Time {
        public long milliseconds() { return 0L; }
        public long nanoseconds() { return 0L; }
        public void sleep(long ms) { }
        public void waitObject(Object obj, java.util.function.Supplier<Boolean> cond, long deadlineMs) { }
    }

    static final KafkaConfigSchema SCHEMA;
    static {
        Map<ConfigResource.Type, ConfigDef> defs = new HashMap<>();
        for (ConfigResource.Type t : new ConfigResource.Type[] {ConfigResource.Type.BROKER, ConfigResource.Type.TOPIC}) {
            defs.put(t, new ConfigDef()
                .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, "false", ConfigDef.Importance.HIGH, "")
                .define("min.insync.replicas", ConfigDef.Type.INT, "1", ConfigDef.Importance.HIGH, ""));
        }
        Map<String, List<ConfigSynonym>> syn = new HashMap<>();
        syn.put("unclean.leader.election.enable", List.of(new ConfigSynonym("unclean.leader.election.enable")));
        syn.put("min.insync.replicas", List.of(new ConfigSynonym("min.insync.replicas")));
        SCHEMA = new KafkaConfigSchema(defs, syn);
    }

    private final SnapshotRegistry snapshotRegistry;
    private final FeatureControlManager featureControl;
    private final ClusterControlManager clusterControl;
    private final ConfigurationControlManager configurationControl;
    private final ReplicationControlManager replicationControl;
    private final int[] replicas;
    private final boolean elrEnabled;
    private final boolean uncleanElection;
    private final List<String> log = new ArrayList<>();

    private ElrControllerHarness(State s) {
        LogContext logContext = new LogContext("[kraftcheck] ");
        this.replicas = s.replicas();
        this.elrEnabled = s.elrEnabled();
        this.uncleanElection = s.uncleanElection();
        snapshotRegistry = new SnapshotRegistry(logContext);
        featureControl = new FeatureControlManager.Builder()
            .setLogContext(logContext)
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(new QuorumFeatures(0, QuorumFeatures.defaultSupportedFeatureMap(true), List.of(0)))
            .build();
        featureControl.replay(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
            .setFeatureLevel(MetadataVersion.latestProduction().featureLevel()));
        featureControl.replay(new FeatureLevelRecord().setName(EligibleLeaderReplicasVersion.FEATURE_NAME)
            .setFeatureLevel(elrEnabled ? EligibleLeaderReplicasVersion.ELRV_1.featureLevel()
                                        : EligibleLeaderReplicasVersion.ELRV_0.featureLevel()));
        clusterControl = new ClusterControlManager.Builder()
            .setLogContext(logContext)
            .setClusterId(CLUSTER_ID)
            .setTime(new FixedTime())
            .setSnapshotRegistry(snapshotRegistry)
            .setSessionTimeoutNs(TimeUnit.SECONDS.toNanos(9))
            .setReplicaPlacer(new StripedReplicaPlacer(new Random(0)))
            .setFeatureControlManager(featureControl)
            .setBrokerShutdownHandler(this::handleBrokerShutdown)
            .build();
        configurationControl = new ConfigurationControlManager.Builder()
            .setLogContext(logContext)
            .setSnapshotRegistry(snapshotRegistry)
            .setFeatureControl(featureControl)
            .setKafkaConfigSchema(SCHEMA)
            .build();
        replicationControl = new ReplicationControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setLogContext(logContext)
            .setMaxElectionsPerImbalance(Integer.MAX_VALUE)
            .setConfigurationControl(configurationControl)
            .setClusterControl(clusterControl)
            .setFeatureControl(featureControl)
            .build();
        clusterControl.activate();
        load(s);
    }

    /** ClusterControlManager's shutdown handler, wired as QuorumController wires it. */
    private void handleBrokerShutdown(int brokerId, boolean isCleanShutdown, List<ApiMessageAndVersion> records) {
        replicationControl.handleBrokerShutdown(brokerId, isCleanShutdown, records);
    }

    static Uuid logDir(int broker) {
        return new Uuid(0x6c6f676469720000L + broker, 0x1L);
    }

    static Uuid incarnation(int broker, long epoch) {
        return new Uuid(0x696e6361726e0000L + broker, epoch + 1);
    }

    /** Rebuild the controller from records, as a controller replaying its metadata log would. */
    private void load(State s) {
        for (Reg r : s.regs()) {
            RegisterBrokerRecord rec = new RegisterBrokerRecord().setBrokerId(r.id()).setBrokerEpoch(r.epoch())
                .setIncarnationId(incarnation(r.id(), r.epoch())).setFenced(r.fenced())
                .setInControlledShutdown(r.inControlledShutdown()).setLogDirs(List.of(logDir(r.id())));
            rec.endPoints().add(new RegisterBrokerRecord.BrokerEndpoint().setName("PLAINTEXT")
                .setHost("localhost").setPort(9092 + r.id()).setSecurityProtocol(SecurityProtocol.PLAINTEXT.id));
            rec.features().add(new RegisterBrokerRecord.BrokerFeature().setName(MetadataVersion.FEATURE_NAME)
                .setMinSupportedVersion(MetadataVersion.MINIMUM_VERSION.featureLevel())
                .setMaxSupportedVersion(MetadataVersion.latestProduction().featureLevel()));
            clusterControl.replay(rec, r.epoch());
        }
        configurationControl.replay(new ConfigRecord().setResourceType(ConfigResource.Type.TOPIC.id())
            .setResourceName(TOPIC).setName("min.insync.replicas").setValue(Integer.toString(s.minIsr())));
        if (uncleanElection) {
            configurationControl.replay(new ConfigRecord().setResourceType(ConfigResource.Type.TOPIC.id())
                .setResourceName(TOPIC).setName("unclean.leader.election.enable").setValue("true"));
        }
        replicationControl.replay(new TopicRecord().setName(TOPIC).setTopicId(TOPIC_ID));
        Part p = s.part();
        List<Uuid> dirs = new ArrayList<>();
        for (int r : replicas) dirs.add(logDir(r));
        replicationControl.replay(new PartitionRecord().setPartitionId(0).setTopicId(TOPIC_ID)
            .setReplicas(list(replicas)).setIsr(list(p.isr())).setLeader(p.leader())
            .setLeaderEpoch(p.leaderEpoch()).setPartitionEpoch(p.partitionEpoch())
            .setLeaderRecoveryState(p.recovering() ? LeaderRecoveryState.RECOVERING.value() : LeaderRecoveryState.RECOVERED.value())
            .setEligibleLeaderReplicas(list(p.elr())).setLastKnownElr(list(p.lastKnownElr()))
            .setDirectories(dirs));
    }

    static List<Integer> list(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int x : a) l.add(x);
        return l;
    }

    /** Replay records into the managers, in order, as QuorumController.replay does. */
    private void replay(List<ApiMessageAndVersion> records) {
        for (ApiMessageAndVersion mv : records) {
            ApiMessage m = mv.message();
            log.add(m.getClass().getSimpleName() + m);
            if (m instanceof RegisterBrokerRecord r) clusterControl.replay(r, r.brokerEpoch());
            else if (m instanceof BrokerRegistrationChangeRecord r) clusterControl.replay(r);
            else if (m instanceof PartitionChangeRecord r) replicationControl.replay(r);
            else if (m instanceof ConfigRecord r) configurationControl.replay(r);
            else if (m instanceof ClearElrRecord r) replicationControl.replay(r);
            else throw new IllegalStateException("unexpected record " + m);
        }
    }

    private State snapshot() {
        PartitionRegistration p = replicationControl.getPartition(TOPIC_ID, 0);
        List<Reg> regs = new ArrayList<>();
        for (BrokerRegistration b : new TreeMap<>(clusterControl.brokerRegistrations()).values()) {
            regs.add(new Reg(b.id(), b.epoch(), b.fenced(), b.inControlledShutdown()));
        }
        int minIsr = Integer.parseInt(configurationControl.getTopicConfig(TOPIC, "min.insync.replicas").value());
        return new State(replicas, minIsr, elrEnabled, uncleanElection, regs,
            new Part(p.leader, p.leaderEpoch, p.partitionEpoch, p.isr, p.elr, p.lastKnownElr,
                     p.leaderRecoveryState == LeaderRecoveryState.RECOVERING));
    }

    private Result done(String error) {
        return new Result(snapshot(), List.copyOf(log), error);
    }

    // ------------------------------------------------------------------ the controller inputs

    /**
     * A broker (re)registers (BrokerRegistrationRequest with PreviousBrokerEpoch; KIP-966
     * "Detection of an unclean shutdown" 3): ClusterControlManager.registerBroker compares it
     * with the registration record and calls the shutdown handler (clean or unclean), then the
     * new RegisterBrokerRecord (fenced) with broker epoch {@code newEpoch}.
     */
    public static Result register(State s, int broker, long previousBrokerEpoch, long newEpoch) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        BrokerRegistrationRequestData req = new BrokerRegistrationRequestData().setBrokerId(broker)
            .setClusterId(CLUSTER_ID).setIncarnationId(incarnation(broker, newEpoch))
            .setPreviousBrokerEpoch(previousBrokerEpoch).setLogDirs(List.of(logDir(broker)));
        req.listeners().add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT")
            .setHost("localhost").setPort(9092 + broker).setSecurityProtocol(SecurityProtocol.PLAINTEXT.id));
        req.features().add(new BrokerRegistrationRequestData.Feature().setName(MetadataVersion.FEATURE_NAME)
            .setMinSupportedVersion(MetadataVersion.MINIMUM_VERSION.featureLevel())
            .setMaxSupportedVersion(MetadataVersion.latestProduction().featureLevel()));
        req.features().add(new BrokerRegistrationRequestData.Feature().setName(EligibleLeaderReplicasVersion.FEATURE_NAME)
            .setMinSupportedVersion((short) 0).setMaxSupportedVersion(EligibleLeaderReplicasVersion.ELRV_1.featureLevel()));
        ControllerResult<?> r = h.clusterControl.registerBroker(req, newEpoch,
            h.featureControl.finalizedFeatures(Long.MAX_VALUE), true);
        h.replay(r.records());
        return h.done("NONE");
    }

    /**
     * A heartbeat from a broker that has caught up with the metadata (KIP-966 "Controller
     * behaviors" 3): processBrokerHeartbeat moves a fenced broker to UNFENCED
     * (handleBrokerUnfenced: elections for leaderless partitions).
     */
    public static Result heartbeat(State s, int broker) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        long epoch = h.clusterControl.brokerRegistrations().get(broker).epoch();
        ControllerResult<?> r = h.replicationControl.processBrokerHeartbeat(new BrokerHeartbeatRequestData()
            .setBrokerId(broker).setBrokerEpoch(epoch).setCurrentMetadataOffset(Long.MAX_VALUE)
            .setWantFence(false).setWantShutDown(false), 0L);
        h.replay(r.records());
        return h.done("NONE");
    }

    /**
     * The broker's session expired (KIP-966 "Controller behaviors" 2): what
     * maybeFenceOneStaleBroker does for it, handleBrokerFenced.
     */
    public static Result fence(State s, int broker) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        List<ApiMessageAndVersion> records = new ArrayList<>();
        h.replicationControl.handleBrokerFenced(broker, records);
        h.replay(records);
        return h.done("NONE");
    }

    /**
     * A controlled shutdown (KIP-966 "Detection of an unclean shutdown" 1): the broker's
     * heartbeat with WantShutDown moves it to CONTROLLED_SHUTDOWN while it leads
     * (handleBrokerInControlledShutdown: out of every ISR, leaders re-elected), and its next
     * heartbeat, once it leads nothing, to SHUTDOWN_NOW (handleBrokerFenced).
     */
    public static Result controlledShutdown(State s, int broker) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        BrokerRegistration reg = h.clusterControl.brokerRegistrations().get(broker);
        List<ApiMessageAndVersion> records = new ArrayList<>();
        if (!reg.fenced()) {
            h.replicationControl.handleBrokerInControlledShutdown(broker, reg.epoch(), records);
            h.replay(records);
            records = new ArrayList<>();
            h.replicationControl.handleBrokerFenced(broker, records);
            h.replay(records);
        }
        return h.done("NONE");
    }

    /** AlterPartition from {@code broker} (KIP-966 "Controller behaviors" 1; KIP-903 epochs). */
    public static Result alterPartition(State s, int broker, long brokerEpoch, int leaderEpoch,
                                        int partitionEpoch, int[] newIsr, long[] newIsrEpochs) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        List<AlterPartitionRequestData.BrokerState> isr = new ArrayList<>();
        for (int i = 0; i < newIsr.length; i++) {
            isr.add(new AlterPartitionRequestData.BrokerState().setBrokerId(newIsr[i]).setBrokerEpoch(newIsrEpochs[i]));
        }
        AlterPartitionRequestData req = new AlterPartitionRequestData().setBrokerId(broker).setBrokerEpoch(brokerEpoch)
            .setTopics(List.of(new AlterPartitionRequestData.TopicData().setTopicId(TOPIC_ID)
                .setPartitions(List.of(new AlterPartitionRequestData.PartitionData().setPartitionIndex(0)
                    .setLeaderEpoch(leaderEpoch).setPartitionEpoch(partitionEpoch)
                    .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED.value())
                    .setNewIsrWithEpochs(isr)))));
        short version = ApiKeys.ALTER_PARTITION.latestVersion();
        ControllerRequestContext ctx = new ControllerRequestContext(new RequestHeaderData()
            .setRequestApiKey(ApiKeys.ALTER_PARTITION.id).setRequestApiVersion(version),
            KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
        ControllerResult<AlterPartitionResponseData> r;
        try {
            r = h.replicationControl.alterPartition(ctx, req);
        } catch (org.apache.kafka.common.errors.ApiException e) {
            return h.done(Errors.forException(e).name());
        }
        h.replay(r.records());
        AlterPartitionResponseData.PartitionData pd = r.response().topics().get(0).partitions().get(0);
        return h.done(Errors.forCode(pd.errorCode()).name());
    }

    /**
     * An IncrementalAlterConfigs of the topic's min.insync.replicas (KIP-966 "Other
     * behaviors" 2): ConfigurationControlManager adds a ClearElrRecord for the topic.
     */
    public static Result setMinIsr(State s, int minIsr) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        Map<String, Map.Entry<AlterConfigOp.OpType, String>> ops = Map.of("min.insync.replicas",
            new AbstractMap.SimpleImmutableEntry<>(AlterConfigOp.OpType.SET, Integer.toString(minIsr)));
        ControllerResult<org.apache.kafka.common.requests.ApiError> r = h.configurationControl.incrementalAlterConfig(
            new ConfigResource(ConfigResource.Type.TOPIC, TOPIC), ops, false, false);
        if (r.response().isFailure()) return h.done(r.response().error().name());
        h.replay(r.records());
        return h.done("NONE");
    }

    /**
     * PartitionChangeBuilder alone, for the paths no controller input reaches (Kafka's own
     * PartitionChangeBuilderTest drives it so): the partition of {@code s}, a target ISR, the
     * replicas shut down uncleanly, the acceptable leaders, the election type and
     * useLastKnownLeaderInBalancedRecovery; the record it builds is replayed.
     */
    public static Result build(State s, int[] targetIsr, int[] uncleanShutdown, int[] acceptable,
                               String election, boolean useLastKnownLeader) {
        ElrControllerHarness h = new ElrControllerHarness(s);
        PartitionRegistration p = h.replicationControl.getPartition(TOPIC_ID, 0);
        java.util.Set<Integer> ok = new java.util.HashSet<>(list(acceptable));
        PartitionChangeBuilder b = new PartitionChangeBuilder(p, TOPIC_ID, 0, ok::contains,
            h.featureControl.metadataVersionOrThrow(), Math.min(s.minIsr(), s.replicas().length),
            h.featureControl.isElrFeatureEnabled());
        b.setTargetIsr(list(targetIsr));
        if (uncleanShutdown.length > 0) b.setUncleanShutdownReplicas(list(uncleanShutdown));
        b.setElection(PartitionChangeBuilder.Election.valueOf(election));
        b.setUseLastKnownLeaderInBalancedRecovery(useLastKnownLeader);
        b.setDefaultDirProvider(ElrControllerHarness::logDir);
        b.build().ifPresent(r -> h.replay(List.of(r)));
        return h.done("NONE");
    }

    /** The state of a fresh cluster: every replica registered (epoch 1) and unfenced, the
     *  topic created with every replica in the ISR and the first replica leading (epoch 0 as
     *  Kafka's createTopics writes it). */
    public static State initial(int[] replicas, int minIsr, boolean elrEnabled, boolean uncleanElection) {
        List<Reg> regs = new ArrayList<>();
        for (int r : replicas) regs.add(new Reg(r, 1, false, false));
        return new State(replicas, minIsr, elrEnabled, uncleanElection, regs,
            new Part(replicas[0], 0, 0, replicas.clone(), new int[0], new int[0], false));
    }
}
