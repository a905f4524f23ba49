// Publishing is one code path now (events/publish.ts): one event is a batch of one.
export { PUBLISH_BATCH_MAX, publishEvents, publishEventsAlone, type BatchEventInput, type BatchOutcome } from './publish.ts';
