-- 23: the build each worker runs (`0.2.0 (1a2b3c4d5e6f)`, from the User-Agent of its latest
-- registration or fetch: wire::WorkerBuild), so an operator can see who runs an old build.
-- NULL: unknown (a worker from before 0.2, which names no build).
ALTER TABLE workers ADD COLUMN build TEXT;
