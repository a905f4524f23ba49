import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'ruby');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};

describe("sdks/ruby: the gem's own tests (minitest, real PostgreSQL and Redis)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    // `rake test` (Debian's rake), the way the gem's README says to run them. Without vitest's
    // TEST=true, which Rake::TestTask would take for the one test file to run.
    const { TEST: _vitest, ...env } = process.env;
    const run = spawnSync('/usr/bin/rake', ['test', 'TESTOPTS=-v'], { cwd: SDK, encoding: 'utf8', env, timeout: 120_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/\d+ runs, \d+ assertions, 0 failures, 0 errors, 0 skips/);
    const vectorTests = output.match(/TestVectors#test_vector_\S+ = [\d.]+ s = \./g) ?? [];
    expect(vectorTests.length, output).toBe(vectors.vectors.length);
  });
});

describe('sdks/ruby: the gem a merchant installs (gem build, gem install --local, require)', () => {
  const work = mkdtempSync(join(tmpdir(), 'payhooks-gem-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const gemHome = join(work, 'gems');
  // Only the temporary GEM_HOME: the gem must load from what was installed, not from the sources.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, LANG: 'C.UTF-8', GEM_HOME: gemHome, GEM_PATH: gemHome };

  it('builds without warnings, installs into an empty GEM_HOME, and loads from outside the source tree', () => {
    const gem = join(work, 'payhooks.gem');
    const build = spawnSync('/usr/bin/gem', ['build', 'payhooks.gemspec', '--output', gem], {
      cwd: SDK,
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    const buildOutput = `${build.stdout}\n${build.stderr}`;
    expect(build.status, buildOutput).toBe(0);
    expect(buildOutput).toContain('Successfully built RubyGem');
    expect(buildOutput).not.toMatch(/WARNING/);

    const install = spawnSync('/usr/bin/gem', ['install', '--local', '--no-document', '--install-dir', gemHome, gem], {
      cwd: work,
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);
    const version = readFileSync(join(SDK, 'lib/payhooks/version.rb'), 'utf8').match(/VERSION = '([^']+)'/)![1]!;
    expect(readdirSync(join(gemHome, 'gems'))).toEqual([`payhooks-${version}`]);

    // From an empty folder: the installed gem, its public API, its one error hierarchy, and no helper left public.
    const script = `
      require 'payhooks'
      spec = Gem.loaded_specs.fetch('payhooks')
      raise "loaded from #{spec.full_gem_path}" unless spec.full_gem_path.start_with?(ENV.fetch('GEM_HOME'))
      raise 'not from the gem' unless $LOADED_FEATURES.grep(%r{/payhooks\\.rb\\z}).all? { |f| f.start_with?(ENV.fetch('GEM_HOME')) }
      secret = 'whsec_install_check'
      event = { 'id' => 'evt_1', 'object' => 'event', 'type' => 'payment.succeeded', 'data' => { 'object' => { 'id' => 'pay_1', 'object' => 'payment' } } }
      body, headers = Payhooks::Webhook.sign_test_delivery(event: event, secret: secret)
      raise 'verify' unless Payhooks::Webhook.verify(body: body, headers: headers, secret: secret)['id'] == 'evt_1'
      [Payhooks::VerificationError, Payhooks::CreditInProgressError, Payhooks::ConfigurationError].each do |c|
        raise "#{c} is not a Payhooks::Error" unless c < Payhooks::Error
      end
      begin
        Payhooks::Webhook.verify(body: body, headers: headers, secret: 'not-a-secret')
        raise 'no error'
      rescue Payhooks::Error => e
        raise e.class.name unless e.is_a?(Payhooks::ConfigurationError)
      end
      %i[secrets_of tolerance_of body_bytes read_header parse_header parse_event check_timestamp].each do |m|
        raise "Payhooks::Webhook.#{m} is public" if Payhooks::Webhook.respond_to?(m)
      end
      begin
        Payhooks::Internal
        raise 'Payhooks::Internal is public'
      rescue NameError
        nil
      end
      handler = Payhooks::WebhookHandler.new(secret: secret, store: Payhooks::Stores::Memory.new) { |_e, _c| nil }
      raise 'handle' unless handler.handle(body: body, headers: headers).status == 200
      handler.close
      puts "payhooks #{Payhooks::VERSION} from #{spec.full_gem_path}"
    `;
    const run = spawnSync('/usr/bin/ruby', ['-e', script], { cwd: work, encoding: 'utf8', env, timeout: 60_000 });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain(`payhooks ${version} from ${join(gemHome, 'gems', `payhooks-${version}`)}`);
  }, 150_000);
});

describeExampleReceiver('ruby', join(REPO_ROOT, 'examples', 'receiver-ruby'));
