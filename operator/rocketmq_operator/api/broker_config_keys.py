"""TEMPORARY placeholder; replaced by the generated list (tools/gen_broker_config_keys.py)."""

BROKER_CONFIG_KEYS: frozenset[str] = frozenset(
    {"flushDiskType", "mappedFileSizeCommitLog", "messageIndexEnable", "timerWheelEnable", "slaveTimeout",
     "haMaxTimeSlaveNotCatchup", "controllerHeartBeatTimeoutMills", "brokerElectionPriority", "autoCreateTopicEnable",
     "sendMessageThreadPoolNums", "deleteWhen", "fileReservedTime", "syncFlushTimeout"}
)
BROKER_CONFIG_KEY_SOURCES: dict[str, str] = {}
CONTROLLER_CONFIG_KEYS: frozenset[str] = frozenset({"mappedFileSize", "scanNotActiveBrokerInterval",
                                                    "notifyBrokerRoleChanged", "supportActingMaster"})
