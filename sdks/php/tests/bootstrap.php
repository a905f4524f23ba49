<?php

declare(strict_types=1);

// Runs without `composer install`: vendor/autoload.php when there is one (composer install, or an
// offline `composer dump-autoload`), else the library's own autoloader; then, for the adapters'
// tests, Debian's packages (php-symfony-http-foundation, php-nyholm-psr7, php-psr-http-*) from the
// include path when Composer did not bring them.
require is_file(__DIR__ . '/../vendor/autoload.php') ? __DIR__ . '/../vendor/autoload.php' : __DIR__ . '/../autoload.php';
$debian = [
    'Symfony\\Component\\HttpFoundation\\Request' => 'Symfony/Component/HttpFoundation/autoload.php',
    'Nyholm\\Psr7\\Factory\\Psr17Factory' => 'Nyholm/Psr7/autoload.php',
];
foreach ($debian as $class => $file) {
    if (!class_exists($class) && stream_resolve_include_path($file) !== false) {
        require_once $file;
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
