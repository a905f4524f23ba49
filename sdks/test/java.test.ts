import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'java');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};
const pom = readFileSync(join(SDK, 'pom.xml'), 'utf8');
const project = /<artifactId>([^<]+)<\/artifactId>\s*<version>([^<]+)<\/version>/.exec(pom.slice(pom.indexOf('</modelVersion>')));
const [ARTIFACT, VERSION] = [project![1]!, project![2]!];
const JAR = join(SDK, 'target', `${ARTIFACT}-${VERSION}.jar`);
const scratch = mkdtempSync(join(tmpdir(), 'payhooks-java-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * For the short-lived JVMs here (Maven, its compiler, Surefire's test JVM, the merchant's
 * program): the client compiler only. The JIT's optimising tier never pays for itself in a
 * process of a few seconds; it was half of `mvn package`'s CPU (11.5 s of CPU, 5.6 s without).
 * The programs behave the same.
 */
const QUICK_JVM = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];

/** Debian's Maven, offline, on Debian's repository of jars (or a copy of it: `settings`). */
function mvn(args: string[], cwd: string, settings = '/etc/maven/settings-debian.xml'): { status: number | null; output: string } {
  const run = spawnSync('mvn', ['-o', '-B', '-s', settings, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 540_000,
    env: { ...process.env, MAVEN_OPTS: process.env.MAVEN_OPTS ?? '-Xmx512m', JAVA_TOOL_OPTIONS: QUICK_JVM.join(' ') },
  });
  return {
    status: run.status,
    output: `$ mvn ${args.join(' ')}\n${run.stdout}\n${run.stderr}${run.error ? `\n${run.error.message}` : ''}`,
  };
}

describe("sdks/java: the jar as a merchant gets it, and the library's own tests (Debian's Maven, offline)", () => {
  it('spec 5.1, 6.2: mvn -o package builds the jar after JUnit 5 passes (real PostgreSQL, Redis, HttpServer, Tomcat) with every shared signature vector', () => {
    rmSync(join(SDK, 'target'), { recursive: true, force: true });
    const run = mvn(['package'], SDK);
    expect(run.status, run.output).toBe(0);
    expect(run.output).toMatch(/Tests run: \d+, Failures: 0, Errors: 0, Skipped: 0\s*$/m);
    // Each vector is a dynamic test, named <method>[n] in Surefire's reports.
    const reports = join(SDK, 'target', 'surefire-reports');
    const xml = readdirSync(reports)
      .filter((f) => f.endsWith('.xml'))
      .map((f) => readFileSync(join(reports, f), 'utf8'))
      .join('\n');
    expect(xml).not.toMatch(/<(failure|error|skipped)\b/);
    expect(xml.match(/<testcase name="sharedSignatureVectors\[\d+\]"/g)?.length, xml).toBe(vectors.vectors.length);
    // The jar holds the library and nothing of its tests.
    expect(existsSync(JAR), run.output).toBe(true);
    const list = spawnSync('jar', ['tf', JAR], { encoding: 'utf8' });
    expect(list.stdout).toContain('dev/payhooks/receiver/Webhook.class');
    expect(list.stdout).toContain('dev/payhooks/receiver/adapters/WebhookServlet.class');
    expect(list.stdout).not.toMatch(/Test(Support)?\.class/);
  }, 600_000);

  it(`a merchant's Maven project depends on dev.payhooks:${ARTIFACT}:${VERSION} (the built jar, installed in a repository) and runs a program`, () => {
    expect(existsSync(JAR), 'the previous test builds the jar').toBe(true);
    // A copy of Debian's repository (links), so installing the jar writes nothing under /usr/share.
    const repo = join(scratch, 'm2');
    const copy = spawnSync('cp', ['-rs', '/usr/share/maven-repo', repo], { encoding: 'utf8' });
    expect(copy.status, copy.stderr).toBe(0);
    const settings = join(scratch, 'settings.xml');
    writeFileSync(settings, `<settings>\n  <localRepository>${repo}</localRepository>\n  <offline>true</offline>\n</settings>\n`);
    const install = mvn(
      ['org.apache.maven.plugins:maven-install-plugin:3.1.0:install-file', `-Dfile=${JAR}`, `-DpomFile=${join(SDK, 'pom.xml')}`],
      SDK,
      settings,
    );
    expect(install.status, install.output).toBe(0);

    const app = join(scratch, 'merchant');
    mkdirSync(join(app, 'src', 'main', 'java', 'shop'), { recursive: true });
    // The program's classpath is what Maven resolved from the library's pom (Jackson comes with it).
    writeFileSync(
      join(app, 'pom.xml'),
      `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>shop.example</groupId>
  <artifactId>merchant</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>dev.payhooks</groupId>
      <artifactId>${ARTIFACT}</artifactId>
      <version>${VERSION}</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>2.22.3</version></plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-jar-plugin</artifactId>
        <version>3.3.0</version>
        <configuration>
          <archive>
            <manifest>
              <mainClass>shop.Main</mainClass>
              <addClasspath>true</addClasspath>
              <classpathLayoutType>repository</classpathLayoutType>
              <classpathPrefix>${repo}/</classpathPrefix>
            </manifest>
          </archive>
        </configuration>
      </plugin>
    </plugins>
  </build>
</project>
`,
    );
    writeFileSync(
      join(app, 'src', 'main', 'java', 'shop', 'Main.java'),
      `package shop;

import dev.payhooks.receiver.Event;
import dev.payhooks.receiver.Headers;
import dev.payhooks.receiver.Webhook;
import dev.payhooks.receiver.WebhookVerificationException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;

public final class Main {
  public static void main(String[] args) throws Exception {
    List<String> secrets = List.of("whsec_merchant");
    byte[] body = "{\\"id\\":\\"evt_1\\",\\"object\\":\\"event\\",\\"type\\":\\"payment.succeeded\\",\\"data\\":{\\"object\\":{\\"id\\":\\"pay_1\\",\\"object\\":\\"payment\\",\\"amount\\":25.50}}}"
        .getBytes(StandardCharsets.UTF_8);
    long now = Instant.now().getEpochSecond();
    Event event = Webhook.verify(body, headers(body, secrets, now), secrets);
    System.out.println("verified " + event.id() + " " + event.object().get("id") + " " + event.object().get("amount"));
    try {
      Webhook.verify(body, headers(body, secrets, now - 3600), secrets);
      System.out.println("a stale delivery was accepted");
    } catch (WebhookVerificationException e) {
      System.out.println("refused " + e.reason().code() + " " + e.status());
    }
  }

  private static Headers headers(byte[] body, List<String> secrets, long t) {
    return Headers.of(Map.of("Service-Event-Id", "evt_1", "Service-Signature", Webhook.sign(body, secrets, t)));
  }
}
`,
    );
    const built = mvn(['package'], app, settings);
    expect(built.status, built.output).toBe(0);
    const ran = spawnSync('java', [...QUICK_JVM, '-jar', join(app, 'target', 'merchant-1.jar')], { encoding: 'utf8', timeout: 60_000 });
    expect(ran.status, `${ran.stdout}\n${ran.stderr}`).toBe(0);
    expect(ran.stdout.trim().split('\n')).toEqual(['verified evt_1 pay_1 25.50', 'refused timestamp_out_of_tolerance 400']);
  }, 600_000);
});

describeExampleReceiver('java', join(REPO_ROOT, 'examples', 'receiver-java'), { startTimeoutMs: 180_000 });
