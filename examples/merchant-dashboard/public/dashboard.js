// The Webhooks tab's frame: payhooks tells its height (so the frame fits its content) and when
// its session ended (then the dashboard asks its own backend for a new link). Messages are taken
// from payhooks' origin only.
const frame = document.getElementById('payhooks');
const origin = frame.dataset.payhooksOrigin;
window.addEventListener('message', async (event) => {
  if (event.origin !== origin || event.source !== frame.contentWindow || typeof event.data !== 'object' || event.data === null) return;
  if (event.data.type === 'payhooks:resize' && Number.isFinite(event.data.height)) {
    frame.style.height = `${Math.min(Math.max(event.data.height, 300), 20000)}px`;
  }
  if (event.data.type === 'payhooks:session_ended') {
    const res = await fetch(`/webhooks/link?mode=${frame.dataset.environment === 'live' ? 'live' : 'test'}`, { method: 'POST' });
    if (res.ok) frame.src = (await res.json()).url;
  }
});
