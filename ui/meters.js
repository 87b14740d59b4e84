// The microphone and speaker meters: each reading from Rust sets its <meter>. The scale runs
// from -60 dBFS (silence, for the eye) to 0 dBFS (full scale).

export const FLOOR_DBFS = -60;

/**
 * Shows one reading on the meter for its direction.
 * @param {{ input: { value: number }, output: { value: number } }} meters
 * @param {{ direction: string, rmsDbfs: number }} reading
 * @returns {boolean} whether a meter was updated
 */
export function renderLevel(meters, reading) {
  const meter = meters[reading.direction];
  if (!meter || typeof reading.rmsDbfs !== "number" || Number.isNaN(reading.rmsDbfs)) return false;
  meter.value = Math.min(0, Math.max(FLOOR_DBFS, reading.rmsDbfs));
  return true;
}

/**
 * How far the talk control's ring reaches for a microphone reading: 0 at the floor (or no
 * reading), 1 at full scale, so the user sees the microphone hears them while they talk.
 * @param {{ direction: string, rmsDbfs: number }} reading
 * @returns {number} from 0 to 1
 */
export function ringLevel(reading) {
  if (reading.direction !== "input" || typeof reading.rmsDbfs !== "number" || Number.isNaN(reading.rmsDbfs)) return 0;
  const clamped = Math.min(0, Math.max(FLOOR_DBFS, reading.rmsDbfs));
  return (clamped - FLOOR_DBFS) / -FLOOR_DBFS;
}
