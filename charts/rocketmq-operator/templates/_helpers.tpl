{{/* Chart name, truncated to a DNS label. */}}
{{- define "rocketmq-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart, or the release name when it already contains the chart name. */}}
{{- define "rocketmq-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rocketmq-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object of the chart (distinct from the labels the operator puts on what it manages). */}}
{{- define "rocketmq-operator.labels" -}}
helm.sh/chart: {{ include "rocketmq-operator.chart" . }}
{{ include "rocketmq-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rocketmq
{{- end }}

{{- define "rocketmq-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rocketmq-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rocketmq-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rocketmq-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "rocketmq-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Checks the schema cannot express (and repeats the ones that matter, for --skip-schema-validation).
*/}}
{{- define "rocketmq-operator.validate" -}}
{{- if not (has .Values.rbac.scope (list "cluster" "namespace")) }}
{{- fail (printf "rbac.scope must be cluster or namespace, not %q" .Values.rbac.scope) }}
{{- end }}
{{- if ne (int .Values.replicaCount) 1 }}
{{- fail "replicaCount must be 1: kopf has no leader election (a second replica would double-handle events, or pause under peering)" }}
{{- end }}
{{- if eq (int .Values.health.port) (int .Values.metrics.port) }}
{{- fail "health.port and metrics.port must differ" }}
{{- end }}
{{- end }}

{{/*
The namespaces the operator watches, as a JSON list: watchNamespaces when given; otherwise the release's own
namespace in namespace scope (the default: least privilege, as Strimzi's operator watches its own namespace), and
[] in cluster scope, which means every namespace. Everything that depends on the watched set (run's arguments,
the Roles, kopf's peering rules, the PodMonitor) reads it from here.
*/}}
{{- define "rocketmq-operator.watchedNamespaces" -}}
{{- if .Values.watchNamespaces }}
{{- toJson .Values.watchNamespaces }}
{{- else if eq .Values.rbac.scope "namespace" }}
{{- toJson (list .Release.Namespace) }}
{{- else }}
{{- toJson list }}
{{- end }}
{{- end }}

{{/* Arguments of `rocketmq-operator run`. */}}
{{- define "rocketmq-operator.args" -}}
- run
{{- $watched := include "rocketmq-operator.watchedNamespaces" . | fromJsonArray }}
{{- if $watched }}
{{- range $watched }}
- --namespace
- {{ . | quote }}
{{- end }}
{{- else }}
- --all-namespaces
{{- end }}
- --liveness
- {{ printf "http://0.0.0.0:%d/healthz" (int .Values.health.port) | quote }}
- --metrics-port
- {{ .Values.metrics.port | int | quote }}
{{- if not .Values.peering.enabled }}
- --standalone
{{- end }}
{{- if .Values.verbose }}
- --verbose
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
RBAC rules for namespaced resources: what the operator reads and writes in each watched namespace.
Used by the ClusterRole (rbac.scope=cluster) and by each Role (rbac.scope=namespace).
*/}}
{{- define "rocketmq-operator.namespacedRules" -}}
# The custom resources: kopf watches them and patches finalizers and annotations (its progress storage).
- apiGroups: ["rocketmq-operator.dev"]
  resources: ["brokergroups", "controllergroups", "topics", "consumergroups", "proxies", "users"]
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["rocketmq-operator.dev"]
  resources: ["brokergroups/status", "controllergroups/status", "topics/status", "consumergroups/status", "proxies/status", "users/status"]
  verbs: ["get", "patch", "update"]
# Owner references with blockOwnerDeletion (set by kopf) need this where the
# OwnerReferencesPermissionEnforcement admission plugin is on (e.g. OpenShift).
- apiGroups: ["rocketmq-operator.dev"]
  resources: ["brokergroups/finalizers", "controllergroups/finalizers", "topics/finalizers", "consumergroups/finalizers", "proxies/finalizers", "users/finalizers"]
  verbs: ["update"]
# What render.kubernetes produces for each group: read back (get) and server-side applied (create, patch).
# Nothing lists, watches or replaces them, and only a NetworkPolicy is deleted (below): owner references let the
# garbage collector remove them.
- apiGroups: ["apps"]
  resources: ["statefulsets", "deployments"]
  verbs: ["get", "create", "patch"]
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "create", "patch"]
# spec.auth: the Secrets a BrokerGroup names are read by name (get); the copy of its admin Secret that the brokers
# mount (<group>-auth-config) and a ControllerGroup's scheduled metadata backups (spec.backup: the ring
# <group>-metadata-<i>) are applied like the objects above; so are spec.tls's authority and certificates (read by
# name, and applied when the operator issues them). Never listed, watched or deleted.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "patch"]
# NetworkPolicies (spec.networkPolicy): applied like the rest; deleted by name when spec.networkPolicy.enabled is
# turned off (the garbage collector removes them only with their group).
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "create", "patch", "delete"]
# Role/broker-id labels, ordered restarts (delete), and the in-sync readiness gate (pods/status).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods/status"]
  verbs: ["patch"]
# list and patch: storage expansion grows each broker PVC in place (spec.resources.requests.storage).
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["list", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if and .Values.peering.enabled (include "rocketmq-operator.watchedNamespaces" . | fromJsonArray) }}
# kopf peering, one KopfPeering per watched namespace.
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end }}

{{/* Read-only access to CRDs: kopf discovers and follows its resources through them. */}}
{{- define "rocketmq-operator.crdRules" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["get", "list", "watch"]
{{- end }}

{{/*
Read-only access to two cluster-scoped kinds, by name: a PVC's StorageClass (may it grow: allowVolumeExpansion)
and the Node of a master's pod (cordoned: switch the master over before the drain evicts it).
*/}}
{{- define "rocketmq-operator.clusterReadRules" -}}
- apiGroups: ["storage.k8s.io"]
  resources: ["storageclasses"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get"]
{{- end }}
