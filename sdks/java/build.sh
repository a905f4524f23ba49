#!/bin/sh
# Compiles the library (and its tests, with `test`) with the JDK alone, against Debian's jars, into
# $PAYHOOKS_JAVA_BUILD (default: build/ here). No Maven and no network: the pom.xml is the
# publishing metadata; this script is how the repository builds and tests it.
#   ./build.sh        the library: build/classes
#   ./build.sh test   the library and its tests, then runs them (JUnit 5's console launcher)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${PAYHOOKS_JAVA_BUILD:-$here/build}
J=/usr/share/java
deps=$J/postgresql.jar:$J/tomcat10-embed-core.jar
rm -rf "$out/classes" "$out/test-classes"
mkdir -p "$out"
javac -encoding UTF-8 -Xlint:all,-serial,-try -d "$out/classes" -cp "$deps" $(find "$here/src/main/java" -name '*.java')
[ "${1:-}" = test ] || exit 0
javac -encoding UTF-8 -d "$out/test-classes" -cp "$out/classes:$deps:$J/junit-jupiter-api.jar:$J/junit-jupiter-params.jar:$J/apiguardian-api.jar:$J/opentest4j.jar" \
  $(find "$here/src/test/java" -name '*.java')
cd "$here"
exec java -jar $J/junit-platform-console-standalone.jar --disable-banner --details=tree \
  -cp "$out/classes:$out/test-classes:$deps" --scan-classpath
