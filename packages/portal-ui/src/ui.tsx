import { Fragment, type ReactNode, useEffect, useRef, useState } from 'react';
import type { DeliveryState, Session, Stats } from './api.ts';
import { Link } from './router.tsx';
import { LOGO_DATA_URL } from './theme.ts';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A timestamp in the user's time zone; the UTC value is in the title (shown on hover). */
export function Time({ iso }: { iso: string | null }) {
  if (!iso) return <span className="muted">—</span>;
  const d = new Date(iso);
  const utc = `${d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, '')} UTC`;
  return (
    <time dateTime={iso} title={utc}>
      {dateFormat.format(d)}
    </time>
  );
}

const STATE_LABELS: Record<DeliveryState, string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed_retrying: 'Failed, retrying',
  exhausted: 'Exhausted',
  cancelled: 'Cancelled',
};

/** A delivery state in colour and in words (the words carry the meaning; colour helps scanning). */
export function StateBadge({ state }: { state: DeliveryState }) {
  return (
    <span className={`badge state-${state}`} data-state={state}>
      {STATE_LABELS[state]}
    </span>
  );
}

/** `reason` `failing`: disabled automatically because every delivery kept failing. */
export function StatusBadge({ status, reason = null }: { status: 'enabled' | 'disabled'; reason?: 'manual' | 'failing' | null }) {
  return (
    <span className={`badge status-${status}`}>
      {status === 'enabled' ? 'Enabled' : reason === 'failing' ? 'Disabled (failing)' : 'Disabled'}
    </span>
  );
}

/** An endpoint's health (failing, recovered); nothing while it is healthy or disabled (the status says so). */
export function HealthBadge({ health }: { health: { state: string; warning: number | null } }) {
  if (health.state !== 'failing' && health.state !== 'recovered') return null;
  return (
    <span className={`badge health-${health.state}`} data-testid="health-badge">
      {health.state === 'recovered' ? 'Recovered' : 'Failing'}
    </span>
  );
}

/** Attempts per hour over the last 24 h: green for succeeded, red for failed, as an inline SVG. */
export function SuccessChart({ stats }: { stats: Stats }) {
  const max = Math.max(1, ...stats.hourly.map((h) => h.attempts));
  const w = 4;
  const gap = 1;
  const height = 24;
  const rate = stats.success_rate === null ? 'no attempts' : `${Math.round(stats.success_rate * 100)}% succeeded`;
  return (
    <span className="chart">
      <svg width={24 * (w + gap)} height={height} role="img" aria-label={`Last 24 hours: ${stats.attempts} attempts, ${rate}`}>
        {stats.hourly.map((h, i) => {
          const total = (h.attempts / max) * height;
          const ok = (h.succeeded / max) * height;
          return (
            // biome-ignore lint/suspicious/noArrayIndexKey: the 24 hourly buckets are fixed positions; the index is their identity
            <g key={i}>
              <rect x={i * (w + gap)} y={0} width={w} height={height} className="chart-bg" />
              <rect x={i * (w + gap)} y={height - total} width={w} height={total - ok} className="chart-fail" />
              <rect x={i * (w + gap)} y={height - ok} width={w} height={ok} className="chart-ok" />
            </g>
          );
        })}
      </svg>
      <span className="chart-label">
        {stats.success_rate === null
          ? '—'
          : `${(stats.success_rate * 100).toFixed(stats.success_rate === 1 || stats.success_rate === 0 ? 0 : 1)}%`}
      </span>
    </span>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="notice error" role="alert">
      {message}
    </div>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'success' | 'warning' | 'error'; children: ReactNode }) {
  return (
    <div className={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

/** Pretty-printed JSON when the text parses, the text itself otherwise; always as text. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * A question asked in place of the button just pressed (Delete…, Cancel delivery…): the first
 * button does it, the second or Escape closes the question.
 */
export function Confirm({
  title,
  children,
  confirm,
  keep,
  busy,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ReactNode;
  confirm: string;
  keep: string;
  busy: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <div className="card confirm" role="alertdialog" aria-labelledby="confirm-title" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <h2 id="confirm-title">{title}</h2>
      <p>{children}</p>
      <div className="actions">
        {/* biome-ignore lint/a11y/noAutofocus: the dialog replaces the button just pressed; focus moves into it so keyboard users can confirm or press Escape */}
        <button type="button" className="danger" autoFocus disabled={busy} onClick={onConfirm}>
          {confirm}
        </button>
        <button type="button" onClick={onClose}>
          {keep}
        </button>
      </div>
    </div>
  );
}

export function Loading() {
  return (
    <p className="muted" aria-live="polite">
      Loading…
    </p>
  );
}

/**
 * An id that may be cut short with an ellipsis (the whole id is in its title), with a button that
 * copies it: ids are what merchants paste into support tickets and their own logs.
 */
export function CopyId({ id, label = 'id' }: { id: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef<HTMLSpanElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(id);
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    } catch {
      // No clipboard access (plain http): select the id so Ctrl+C copies it.
      const range = document.createRange();
      if (ref.current) range.selectNodeContents(ref.current);
      document.getSelection()?.removeAllRanges();
      document.getSelection()?.addRange(range);
    }
  };
  return (
    <span className="copy-id">
      <span ref={ref} className="mono small muted id-text" title={id}>
        {id}
      </span>
      <button type="button" className="copy-button" onClick={() => void copy()} aria-label={`Copy ${label} ${id}`} title={`Copy ${label}`}>
        {copied ? (
          'Copied'
        ) : (
          <svg width="12" height="12" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
            <rect x="5" y="5" width="9" height="9" rx="1.5" fill="none" stroke="currentColor" strokeWidth="1.6" />
            <path
              d="M3.5 10.5H3A1.5 1.5 0 0 1 1.5 9V3A1.5 1.5 0 0 1 3 1.5h6A1.5 1.5 0 0 1 10.5 3v.5"
              fill="none"
              stroke="currentColor"
              strokeWidth="1.6"
            />
          </svg>
        )}
      </button>
    </span>
  );
}

/**
 * A table that may be wider than the screen: when it is, a hint says it scrolls sideways (and
 * goes once the merchant has scrolled to its end).
 */
export function ScrollTable({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [more, setMore] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const check = () => setMore(el.scrollWidth - el.clientWidth - el.scrollLeft > 1);
    check();
    const observer = new ResizeObserver(check);
    observer.observe(el);
    el.addEventListener('scroll', check, { passive: true });
    return () => {
      observer.disconnect();
      el.removeEventListener('scroll', check);
    };
  }, []);
  return (
    <div className={`table-scroll${more ? ' more' : ''}`}>
      <div className="table-wrap" ref={ref}>
        {children}
      </div>
      {more && (
        <p className="scroll-hint small muted" data-testid="scroll-hint">
          Scroll sideways for more →
        </p>
      )}
    </div>
  );
}

/**
 * Where the page is: `Webhooks > Endpoints > https://…`, each step but the last a link. The
 * separators are hidden from screen readers (the list of links says the same).
 */
export function Crumbs({ items }: { items: Array<{ label: string; to?: string }> }) {
  return (
    <nav className="crumbs" aria-label="Breadcrumb">
      {items.map((item, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the steps of a path are fixed positions
        <Fragment key={i}>
          {i > 0 && (
            <span className="sep" aria-hidden="true">
              {' > '}
            </span>
          )}
          {item.to && i < items.length - 1 ? (
            <Link to={item.to} className="crumb" title={item.label}>
              {item.label}
            </Link>
          ) : (
            <span className="crumb" title={item.label} aria-current={i === items.length - 1 ? 'page' : undefined}>
              {item.label}
            </span>
          )}
        </Fragment>
      ))}
    </nav>
  );
}

/**
 * The Platform's mark: its logo (a PNG, JPEG or WebP data: URL the server checked), else the
 * theme's name, else the Platform's name. Always an image or text, never markup.
 */
export function Brand({ session }: { session: Session }) {
  const { theme, platform } = session;
  const name = theme.name ?? platform.name;
  if (theme.logo && LOGO_DATA_URL.test(theme.logo)) return <img className="brand-logo" src={theme.logo} alt={name} />;
  return <span className="brand-name">{name}</span>;
}
