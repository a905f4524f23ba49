<?php

declare(strict_types=1);

/*
 * For projects without Composer: `require '/path/to/payhooks/autoload.php';` loads the library's
 * classes on demand (PSR-4, Payhooks\Receiver\ => src/). With Composer, use vendor/autoload.php.
 */
spl_autoload_register(static function (string $class): void {
    $prefix = 'Payhooks\\Receiver\\';
    if (strncmp($class, $prefix, strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
