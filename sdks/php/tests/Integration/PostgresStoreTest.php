<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Integration;

use Payhooks\Receiver\Store\CreditStore;
use Payhooks\Receiver\Store\PostgresStore;
use Payhooks\Receiver\Store\WebhookStore;
use Payhooks\Receiver\Tests\Support\Race;
use Payhooks\Receiver\Tests\Support\Services;
use Payhooks\Receiver\Tests\Support\StoreContractTestCase;

/** The PostgreSQL store on a real server, in a database of its own. */
final class PostgresStoreTest extends StoreContractTestCase
{
    private static string $url;
    private static \PDO $pdo;

    public static function setUpBeforeClass(): void
    {
        [self::$url, self::$pdo] = Services::createDatabase();
        self::$pdo->exec('CREATE TABLE race_ledger (payment_id text NOT NULL)');
        self::$pdo->exec('CREATE TABLE ledger (payment_id text NOT NULL, amount numeric NOT NULL)');
    }

    public static function tearDownAfterClass(): void
    {
        Services::dropDatabase(self::$url);
    }

    protected function store(): WebhookStore&CreditStore
    {
        return new PostgresStore(self::$pdo);
    }

    public function testTheTablesAreTheOnesEveryPayhooksLibraryUses(): void
    {
        $this->store()->migrate();
        $columns = self::$pdo->query("SELECT column_name FROM information_schema.columns WHERE table_name = 'payhooks_events' ORDER BY ordinal_position")->fetchAll(\PDO::FETCH_COLUMN);
        self::assertSame(['event_id', 'event_type', 'state', 'payload', 'attempts', 'token', 'locked_until', 'next_attempt_at', 'last_error', 'received_at', 'updated_at'], $columns);
        $credits = self::$pdo->query("SELECT column_name FROM information_schema.columns WHERE table_name = 'payhooks_credits' ORDER BY ordinal_position")->fetchAll(\PDO::FETCH_COLUMN);
        self::assertSame(['payment_id', 'credited_at'], $credits);
        // Idempotent, and a custom schema-qualified name works.
        $this->store()->migrate();
        self::$pdo->exec('CREATE SCHEMA IF NOT EXISTS shop');
        $custom = new PostgresStore(self::$pdo, 'shop.webhook_inbox', 'shop.webhook_credits');
        self::assertNotNull($custom->claim(self::event('evt_custom'), 1000));
        self::assertSame('1', (string) self::$pdo->query('SELECT count(*) FROM shop.webhook_inbox')->fetchColumn());
        $this->expectException(\InvalidArgumentException::class);
        new PostgresStore(self::$pdo, 'events; DROP TABLE ledger');
    }

    public function testSpec8DoneIdsArePurgedAfter30DaysOnlyAndFailedOnesNever(): void
    {
        $store = $this->store();
        $old = self::id('old');
        $recent = self::id('recent');
        $failed = self::id('failed_old');
        $store->complete($store->claim(self::event($old), 1000));
        $store->complete($store->claim(self::event($recent), 1000));
        $store->markFailed($store->claim(self::event($failed), 1000), new \RuntimeException('x'));
        self::$pdo->prepare("UPDATE payhooks_events SET updated_at = now() - interval '31 days' WHERE event_id IN (?, ?)")->execute([$old, $failed]);
        self::$pdo->prepare("UPDATE payhooks_events SET updated_at = now() - interval '29 days' WHERE event_id = ?")->execute([$recent]);
        self::assertGreaterThanOrEqual(1, $store->purge());
        self::assertNull($store->inspect($old));
        self::assertSame('done', $store->inspect($recent)['state']);
        self::assertSame('failed', $store->inspect($failed)['state']);
        // The payload is dropped once the work is done: only the id is kept.
        self::assertNull(self::$pdo->query("SELECT payload FROM payhooks_events WHERE event_id = '{$recent}'")->fetchColumn());
    }

    public function testSpec623TheCreditMarkerAndTheLedgerRowCommitTogether(): void
    {
        $store = $this->store();
        $payment = 'pay_' . bin2hex(random_bytes(4));
        try {
            $store->creditOnce($payment, function (\PDO $tx) use ($payment): void {
                self::assertTrue($tx->inTransaction());
                $tx->prepare('INSERT INTO ledger (payment_id, amount) VALUES (?, 12.34)')->execute([$payment]);
                throw new \RuntimeException('crash after the ledger row');
            });
        } catch (\RuntimeException) {
        }
        self::assertSame(0, $this->ledgerRows($payment), 'the ledger row rolled back with the marker');
        self::assertSame('0', (string) self::$pdo->query("SELECT count(*) FROM payhooks_credits WHERE payment_id = '{$payment}'")->fetchColumn());
        $result = $store->creditOnce($payment, fn (\PDO $tx) => $tx->prepare('INSERT INTO ledger (payment_id, amount) VALUES (?, 12.34)')->execute([$payment]));
        self::assertTrue($result->credited);
        self::assertFalse($store->creditOnce($payment, fn (\PDO $tx) => $tx->prepare('INSERT INTO ledger (payment_id, amount) VALUES (?, 12.34)')->execute([$payment]))->credited);
        self::assertSame(1, $this->ledgerRows($payment));
    }

    public function testCreditOnceInsideYourOwnTransactionCommitsWithIt(): void
    {
        $store = $this->store();
        $payment = 'pay_' . bin2hex(random_bytes(4));
        self::$pdo->beginTransaction();
        $store->creditOnce($payment, fn (\PDO $tx) => $tx->prepare('INSERT INTO ledger (payment_id, amount) VALUES (?, 1)')->execute([$payment]));
        self::assertTrue(self::$pdo->inTransaction(), 'your transaction is still yours');
        self::$pdo->rollBack();
        self::assertSame(0, $this->ledgerRows($payment));
        self::assertTrue($store->creditOnce($payment, fn () => null)->credited, 'the marker rolled back with your transaction');
    }

    public function testSpec621ConcurrentCopiesOfADeliveryGetOneClaim(): void
    {
        $results = Race::run(8, 'pg', self::$url, 'claim', self::id('race'));
        self::assertSame(1, count(array_filter($results, static fn (array $r): bool => $r['claimed'])), json_encode($results));
    }

    public function testSpec623ConcurrentCreditsOfAPaymentCreditOnce(): void
    {
        $payment = 'pay_race_' . bin2hex(random_bytes(4));
        $results = Race::run(8, 'pg', self::$url, 'credit', $payment);
        self::assertSame(1, count(array_filter($results, static fn (array $r): bool => $r['credited'])), json_encode($results));
        self::assertSame('1', (string) self::$pdo->query("SELECT count(*) FROM race_ledger WHERE payment_id = '{$payment}'")->fetchColumn());
    }

    public function testPdoFromUrlAndTheConnectionChecks(): void
    {
        $pdo = PostgresStore::pdoFromUrl(self::$url . '?application_name=payhooks_test');
        self::assertSame('payhooks_test', $pdo->query('SHOW application_name')->fetchColumn());
        $pdo->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_SILENT);
        try {
            new PostgresStore($pdo);
            self::fail('accepted a PDO that does not throw');
        } catch (\InvalidArgumentException $e) {
            self::assertStringContainsString('ERRMODE_EXCEPTION', $e->getMessage());
        }
        $this->expectException(\InvalidArgumentException::class);
        PostgresStore::pdoFromUrl('mysql://root@localhost/shop');
    }

    private function ledgerRows(string $payment): int
    {
        $statement = self::$pdo->prepare('SELECT count(*) FROM ledger WHERE payment_id = ?');
        $statement->execute([$payment]);
        return (int) $statement->fetchColumn();
    }
}
