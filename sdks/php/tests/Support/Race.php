<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Support;

/** Runs several PHP processes (tests/fixtures/race.php) that start the same operation at once. */
final class Race
{
    /**
     * @return list<array<string, mixed>> what each contender printed
     */
    public static function run(int $contenders, string $kind, string $where, string $op, string $id): array
    {
        $gate = sys_get_temp_dir() . '/payhooks-race-' . bin2hex(random_bytes(6));
        $procs = [];
        for ($i = 0; $i < $contenders; $i++) {
            $proc = proc_open([PHP_BINARY, __DIR__ . '/../fixtures/race.php', $kind, $where, $op, $id, $gate], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            if (!is_resource($proc)) {
                throw new \RuntimeException('cannot start a contender');
            }
            $procs[] = [$proc, $pipes];
        }
        // Open the gate once every contender is connected and waiting at it.
        foreach ($procs as [, $pipes]) {
            $line = fgets($pipes[1]);
            if ($line !== "ready\n") {
                throw new \RuntimeException('a contender failed to start: ' . $line . stream_get_contents($pipes[2]));
            }
        }
        touch($gate);
        $results = [];
        try {
            foreach ($procs as [$proc, $pipes]) {
                $out = stream_get_contents($pipes[1]);
                $err = stream_get_contents($pipes[2]);
                fclose($pipes[1]);
                fclose($pipes[2]);
                $code = proc_close($proc);
                if ($code !== 0) {
                    throw new \RuntimeException("a contender exited with {$code}: {$out}{$err}");
                }
                $results[] = json_decode(trim((string) $out), true, 512, JSON_THROW_ON_ERROR);
            }
        } finally {
            @unlink($gate);
        }
        return $results;
    }
}
