#!/usr/bin/env bash
# Put the kafka-clients jar of the pinned Kafka release into the local Maven
# repository. tools/build_specs.py reads the official message specs from it, and
# tests/protocol/test_spec_agreement.py uses it as an oracle (it skips that oracle when
# the jar is absent). Set MAVEN_REPO_LOCAL to use a repository other than ~/.m2.
set -euo pipefail

# The pinned release is conformance.resources.UPSTREAM_KAFKA (read from the file: no install needed).
KAFKA_VERSION="${KAFKA_VERSION:-$(sed -n 's/^UPSTREAM_KAFKA = "\(.*\)"$/\1/p' "$(dirname "$0")/../conformance/resources.py")}"
test -n "$KAFKA_VERSION" || { echo "fetch_oracles: no UPSTREAM_KAFKA in conformance/resources.py" >&2; exit 1; }
repo="${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}"
jar="$repo/org/apache/kafka/kafka-clients/$KAFKA_VERSION/kafka-clients-$KAFKA_VERSION.jar"

if [ ! -f "$jar" ]; then
  # C1 alone: Maven's JVM ends before C2's compiling pays (conformance/targets/kafka/jars.py, MAVEN_JIT)
  MAVEN_OPTS="-XX:TieredStopAtLevel=1 ${MAVEN_OPTS:-}" mvn -B -q -Dstyle.color=never dependency:get -Dtransitive=false \
    -Dmaven.repo.local="$repo" \
    -Dartifact="org.apache.kafka:kafka-clients:$KAFKA_VERSION"
fi
test -f "$jar" || { echo "fetch_oracles: $jar missing after mvn" >&2; exit 1; }
echo "fetch_oracles: $jar"
