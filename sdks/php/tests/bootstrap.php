<?php

declare(strict_types=1);

// Runs without `composer install`: the library's own autoloader, and Debian's packages
// (php-symfony-http-foundation, php-nyholm-psr7, php-psr-http-*) from the include path. After a
// `composer install`, vendor/autoload.php is used instead.
if (is_file(__DIR__ . '/../vendor/autoload.php')) {
    require __DIR__ . '/../vendor/autoload.php';
} else {
    require __DIR__ . '/../autoload.php';
    foreach (['Symfony/Component/HttpFoundation/autoload.php', 'Nyholm/Psr7/autoload.php'] as $debian) {
        if (stream_resolve_include_path($debian) !== false) {
            require_once $debian;
        }
    }
}

spl_autoload_register(static function (string $class): void {
    $prefix = 'Payhooks\\Receiver\\Tests\\';
    if (str_starts_with($class, $prefix)) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
