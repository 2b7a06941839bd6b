--
-- PostgreSQL database dump
--

\restrict saRJ0krUF2Twz9EwgT0rSEPcw1zTdC9LsDLq24nOyRq4bjoEiJhwwLDFOCx1NfC

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: engine_state; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.engine_state (
    name character varying NOT NULL,
    last_seq bigint NOT NULL
);


--
-- Name: events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.events (
    id character varying NOT NULL,
    seq bigint NOT NULL,
    "time" timestamp without time zone NOT NULL,
    received timestamp without time zone NOT NULL,
    host character varying NOT NULL,
    kind character varying NOT NULL,
    component character varying,
    severity character varying,
    job character varying,
    rank integer,
    message character varying,
    attrs jsonb
);


--
-- Name: events_arrival; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.events_arrival
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: incident_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.incident_events (
    incident_id character varying NOT NULL,
    event_id character varying NOT NULL
);


--
-- Name: incidents; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.incidents (
    id character varying NOT NULL,
    number integer NOT NULL,
    scope character varying NOT NULL,
    job character varying,
    status character varying NOT NULL,
    status_set_by_oncall boolean NOT NULL,
    opened timestamp without time zone NOT NULL,
    closed timestamp without time zone,
    updated timestamp without time zone NOT NULL,
    start timestamp without time zone NOT NULL,
    last timestamp without time zone NOT NULL,
    symptoms integer NOT NULL,
    hosts integer NOT NULL,
    planned boolean NOT NULL,
    root_cause jsonb NOT NULL,
    confirmed jsonb,
    category character varying NOT NULL,
    cause character varying NOT NULL,
    candidates jsonb NOT NULL,
    action jsonb NOT NULL,
    gpus integer NOT NULL,
    gpu_hours_lost double precision NOT NULL,
    failed_at timestamp without time zone NOT NULL,
    interruption_end timestamp without time zone,
    notes jsonb NOT NULL,
    topology_version integer
);


--
-- Name: jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.jobs (
    id character varying NOT NULL,
    start timestamp without time zone NOT NULL,
    "end" timestamp without time zone,
    state character varying NOT NULL,
    state_time timestamp without time zone NOT NULL,
    registered timestamp without time zone NOT NULL,
    gpus_per_host integer,
    hosts jsonb,
    ranks jsonb,
    parallelism jsonb,
    topology_version integer,
    attrs jsonb
);


--
-- Name: schema_info; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_info (
    version integer NOT NULL
);


--
-- Name: tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tokens (
    id character varying NOT NULL,
    name character varying,
    role character varying NOT NULL,
    host_pattern character varying,
    secret_sha256 character varying NOT NULL,
    created timestamp without time zone NOT NULL,
    revoked timestamp without time zone
);


--
-- Name: topologies; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.topologies (
    version integer NOT NULL,
    created timestamp without time zone NOT NULL,
    body bytea NOT NULL,
    components integer NOT NULL,
    links integer NOT NULL,
    hosts integer NOT NULL,
    gpus integer NOT NULL
);


--
-- Data for Name: engine_state; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.engine_state (name, last_seq) FROM stdin;
incidents	67
\.


--
-- Data for Name: events; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.events (id, seq, "time", received, host, kind, component, severity, job, rank, message, attrs) FROM stdin;
e-63ae71e302b5bb87bb518f6bc8586660	1	2026-11-29 07:30:00	2026-11-30 13:06:58.48272	node0000	checkpoint_save	node0000	info	llama-small	\N	\N	{"step": 100}
e-a5aff0b2c91bb0cc9ad6d2bc9a2f721d	2	2026-11-29 08:00:00	2026-11-30 13:06:58.48272	node0003	gpu_xid	node0003/gpu3	critical	llama-small	\N	NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.	{"pci": "0000:3b:00", "xid": 79}
e-c304b6e1f8ef56f1075f99c0ab8e2614	3	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu0	error	llama-small	0	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-89d0095e1809ea4ac9fb33975b7cac31	4	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu1	error	llama-small	1	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-560f0c77a0ca47a338f1ccbf9df3eef1	5	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu2	error	llama-small	2	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-b88c8015e5baa15805b08eb4b083b8fa	6	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu3	error	llama-small	3	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-41a33548e9a210759d36fe02de6e7639	7	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu4	error	llama-small	4	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-c3e5984e6936c96334ef7f9d04fd166c	8	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu5	error	llama-small	5	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-e9d806921bbaa96aeab6ad1264b6afcb	9	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu6	error	llama-small	6	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-7eae27381f68802bb41ae8ef57eda172	10	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0040	nccl_timeout	node0000/gpu7	error	llama-small	7	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-8738270538ae8323dc3695426462f5e9	11	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu0	error	llama-small	8	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-28cdc8ead3af8af6f9118ae276471ea6	12	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu1	error	llama-small	9	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-01f7225528adb4dbf95643ec8595f8c4	13	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu2	error	llama-small	10	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-a60ea9c95007d547d9e8a11df0f6eebc	14	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu3	error	llama-small	11	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-309657cbbaf59ec9f667699665099133	15	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu4	error	llama-small	12	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-730a686deaefe0cf01d87218ba48ad12	16	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu5	error	llama-small	13	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-f5e07b34645164c7e668716ca8fb1fe4	17	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu6	error	llama-small	14	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-ea91093c25b96b6a933db56fcc1984fa	18	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0041	nccl_timeout	node0001/gpu7	error	llama-small	15	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-9f3fa32ba4920013b85d8281e969cb45	19	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu0	error	llama-small	16	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-c1f141c8bdb0cadbe4e35dd7c2c4f5b2	20	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu1	error	llama-small	17	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-ec412d8ccb8b0ae4df279f8205f23ccd	21	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu2	error	llama-small	18	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-951c3567f5fe0d92d49123995b4aa09f	22	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu3	error	llama-small	19	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-365f0a309ae2752bbed0801672cc10cc	23	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu4	error	llama-small	20	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-5cd9642b18395249a74856e2864a3d6c	24	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu5	error	llama-small	21	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-cc6e33c816aa62266e65703d015c6073	25	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu6	error	llama-small	22	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-6d0b5e5aea3506f0ec49401557d3da4c	26	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0042	nccl_timeout	node0002/gpu7	error	llama-small	23	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-6e10d27eddf157a68ddc9f8bae87b007	27	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu0	error	llama-small	24	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-1fbd7397518442b4f8c3eb5059c25356	28	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu1	error	llama-small	25	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-cd407734f6a86bbd9cfeacbe528dd6b7	29	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu2	error	llama-small	26	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-036f91184f3b7025579e78d47f2d01db	30	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu3	error	llama-small	27	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-8f00213cd00be0d828e859480525a553	31	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu4	error	llama-small	28	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-149171e5132312674b2b5bfa57bd3ca2	32	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu5	error	llama-small	29	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-4a84b1f51bb0236eed589d54a64e0098	33	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu6	error	llama-small	30	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-5c920e6020fb1c8a1814470d267931a1	34	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0043	nccl_timeout	node0003/gpu7	error	llama-small	31	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-ba8bb2e79875825a6528d51b027996b6	35	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu0	error	llama-small	32	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-036548337a094f318a727bec2321de1e	36	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu1	error	llama-small	33	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-df8b7ccfe3fa510f72253c9b80b393d3	37	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu2	error	llama-small	34	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-64db8be0887e65689f11b9e68ecf5501	38	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu3	error	llama-small	35	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-95b1067db86268cf68bfb2f07c86e633	39	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu4	error	llama-small	36	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-0b3a2f6574ca363f9854d7573309e625	40	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu5	error	llama-small	37	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-4adbaddafd1da773601dfd9e8c2f9458	41	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu6	error	llama-small	38	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-2b88d0c7f3294e80f60e5ae8845fd170	42	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0044	nccl_timeout	node0004/gpu7	error	llama-small	39	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-b42d236f58c22172d8f3218acaebdfee	43	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu0	error	llama-small	40	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-47ee8205a9abd1a6b98509236fe61866	44	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu1	error	llama-small	41	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-625e363cf1bf6340bdd334e0e33c566a	45	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu2	error	llama-small	42	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-36a721baa2566e62e8ad8e12a70ae704	46	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu3	error	llama-small	43	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-063f3307206761a343828f5f852b553a	47	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu4	error	llama-small	44	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-84b6f9105c53ba01b1ae644894e252c6	48	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu5	error	llama-small	45	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-e1a0c4488054839dc3527d2d84a3580e	49	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu6	error	llama-small	46	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-c93c5e407e0a0df54a4d033fe935152c	50	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0045	nccl_timeout	node0005/gpu7	error	llama-small	47	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-2782c6685943d3bf593b33d45886f1cd	51	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu0	error	llama-small	48	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-ac684fff93f0460d9733850ef164d392	52	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu1	error	llama-small	49	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-6098ac47d788abfb0048d4d96a73ea29	53	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu2	error	llama-small	50	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-75d7f6adf6c1e41193a223c5247dbd20	54	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu3	error	llama-small	51	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-cb6151befb9954ffa104f7fcc2087e34	55	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu4	error	llama-small	52	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-81107ae46b515a8e20b599e54d760067	56	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu5	error	llama-small	53	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-9eb8234815d52b3ab06aa37e5c32451e	57	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu6	error	llama-small	54	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-e3f622d6b35647ea6f585f7eff9df9a6	58	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0046	nccl_timeout	node0006/gpu7	error	llama-small	55	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-5b25e4c886bc753dc8f03f8d30b640d2	59	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu0	error	llama-small	56	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-e3910d3b07d2d520523614e49a6f60be	60	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu1	error	llama-small	57	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-57ab666498dddaf71094e65007fb4053	61	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu2	error	llama-small	58	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-fe68239a7a88b325d464effcff8107e5	62	2026-11-29 08:10:04	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu3	error	llama-small	59	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-8f3b030d39eec193901070d057cc7110	63	2026-11-29 08:10:00	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu4	error	llama-small	60	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-bbbc0a697e34156c9e3c4882ac2a7f4b	64	2026-11-29 08:10:01	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu5	error	llama-small	61	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-6adacca162d7c6a0bb0733d7d7157d42	65	2026-11-29 08:10:02	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu6	error	llama-small	62	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-9e6f7c57e995407ffa61e61b495cc48f	66	2026-11-29 08:10:03	2026-11-30 13:06:58.48272	node0047	nccl_timeout	node0007/gpu7	error	llama-small	63	\N	{"op": "ALLREDUCE", "seq": 808, "elapsed_ms": 600020, "timeout_ms": 600000}
e-41fe7a4a8c1dacd8914154e90d5a2b94	67	2026-11-29 08:14:00	2026-11-30 13:06:58.48272	node0000	job_restart	node0000	warning	llama-small	\N	\N	{}
\.


--
-- Data for Name: incident_events; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.incident_events (incident_id, event_id) FROM stdin;
inc-000001	e-01f7225528adb4dbf95643ec8595f8c4
inc-000001	e-036548337a094f318a727bec2321de1e
inc-000001	e-036f91184f3b7025579e78d47f2d01db
inc-000001	e-063f3307206761a343828f5f852b553a
inc-000001	e-0b3a2f6574ca363f9854d7573309e625
inc-000001	e-149171e5132312674b2b5bfa57bd3ca2
inc-000001	e-1fbd7397518442b4f8c3eb5059c25356
inc-000001	e-2782c6685943d3bf593b33d45886f1cd
inc-000001	e-28cdc8ead3af8af6f9118ae276471ea6
inc-000001	e-2b88d0c7f3294e80f60e5ae8845fd170
inc-000001	e-309657cbbaf59ec9f667699665099133
inc-000001	e-365f0a309ae2752bbed0801672cc10cc
inc-000001	e-36a721baa2566e62e8ad8e12a70ae704
inc-000001	e-41a33548e9a210759d36fe02de6e7639
inc-000001	e-47ee8205a9abd1a6b98509236fe61866
inc-000001	e-4a84b1f51bb0236eed589d54a64e0098
inc-000001	e-4adbaddafd1da773601dfd9e8c2f9458
inc-000001	e-560f0c77a0ca47a338f1ccbf9df3eef1
inc-000001	e-57ab666498dddaf71094e65007fb4053
inc-000001	e-5b25e4c886bc753dc8f03f8d30b640d2
inc-000001	e-5c920e6020fb1c8a1814470d267931a1
inc-000001	e-5cd9642b18395249a74856e2864a3d6c
inc-000001	e-6098ac47d788abfb0048d4d96a73ea29
inc-000001	e-625e363cf1bf6340bdd334e0e33c566a
inc-000001	e-64db8be0887e65689f11b9e68ecf5501
inc-000001	e-6adacca162d7c6a0bb0733d7d7157d42
inc-000001	e-6d0b5e5aea3506f0ec49401557d3da4c
inc-000001	e-6e10d27eddf157a68ddc9f8bae87b007
inc-000001	e-730a686deaefe0cf01d87218ba48ad12
inc-000001	e-75d7f6adf6c1e41193a223c5247dbd20
inc-000001	e-7eae27381f68802bb41ae8ef57eda172
inc-000001	e-81107ae46b515a8e20b599e54d760067
inc-000001	e-84b6f9105c53ba01b1ae644894e252c6
inc-000001	e-8738270538ae8323dc3695426462f5e9
inc-000001	e-89d0095e1809ea4ac9fb33975b7cac31
inc-000001	e-8f00213cd00be0d828e859480525a553
inc-000001	e-8f3b030d39eec193901070d057cc7110
inc-000001	e-951c3567f5fe0d92d49123995b4aa09f
inc-000001	e-95b1067db86268cf68bfb2f07c86e633
inc-000001	e-9e6f7c57e995407ffa61e61b495cc48f
inc-000001	e-9eb8234815d52b3ab06aa37e5c32451e
inc-000001	e-9f3fa32ba4920013b85d8281e969cb45
inc-000001	e-a5aff0b2c91bb0cc9ad6d2bc9a2f721d
inc-000001	e-a60ea9c95007d547d9e8a11df0f6eebc
inc-000001	e-ac684fff93f0460d9733850ef164d392
inc-000001	e-b42d236f58c22172d8f3218acaebdfee
inc-000001	e-b88c8015e5baa15805b08eb4b083b8fa
inc-000001	e-ba8bb2e79875825a6528d51b027996b6
inc-000001	e-bbbc0a697e34156c9e3c4882ac2a7f4b
inc-000001	e-c1f141c8bdb0cadbe4e35dd7c2c4f5b2
inc-000001	e-c304b6e1f8ef56f1075f99c0ab8e2614
inc-000001	e-c3e5984e6936c96334ef7f9d04fd166c
inc-000001	e-c93c5e407e0a0df54a4d033fe935152c
inc-000001	e-cb6151befb9954ffa104f7fcc2087e34
inc-000001	e-cc6e33c816aa62266e65703d015c6073
inc-000001	e-cd407734f6a86bbd9cfeacbe528dd6b7
inc-000001	e-df8b7ccfe3fa510f72253c9b80b393d3
inc-000001	e-e1a0c4488054839dc3527d2d84a3580e
inc-000001	e-e3910d3b07d2d520523614e49a6f60be
inc-000001	e-e3f622d6b35647ea6f585f7eff9df9a6
inc-000001	e-e9d806921bbaa96aeab6ad1264b6afcb
inc-000001	e-ea91093c25b96b6a933db56fcc1984fa
inc-000001	e-ec412d8ccb8b0ae4df279f8205f23ccd
inc-000001	e-f5e07b34645164c7e668716ca8fb1fe4
inc-000001	e-fe68239a7a88b325d464effcff8107e5
\.


--
-- Data for Name: incidents; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.incidents (id, number, scope, job, status, status_set_by_oncall, opened, closed, updated, start, last, symptoms, hosts, planned, root_cause, confirmed, category, cause, candidates, action, gpus, gpu_hours_lost, failed_at, interruption_end, notes, topology_version) FROM stdin;
inc-000001	1	job:llama-small	llama-small	resolved	f	2026-11-29 08:00:00	2026-11-29 08:14:00	2026-11-30 13:06:58.743643	2026-11-29 07:59:59.98	2026-11-29 08:00:03.98	64	9	f	{"kind": "gpu_xid", "cause": "gpu_fell_off_bus", "category": "gpu", "evidence": ["e-a5aff0b2c91bb0cc9ad6d2bc9a2f721d"], "component": "node0003/gpu3", "confidence": 1.0, "explanation": "node0003/gpu3: gpu fell off bus (gpu_xid XID 79 at 08:00:00); 64 symptoms on 9 hosts followed; evict node0003 (data-parallel replica 3, ranks 24–31), drain it for repair, and continue."}	null	gpu	gpu_fell_off_bus	[{"score": 1.0, "component": "node0003/gpu3"}]	{"kind": "evict", "detail": "evict node0003 (data-parallel replica 3, ranks 24–31), drain it for repair, and continue", "target": "node0003"}	64	46.933	2026-11-29 08:00:00	2026-11-29 08:14:00	[{"text": "written by release 0.1.0", "time": "2026-11-30T13:06:58.743643Z", "author": null}]	1
\.


--
-- Data for Name: jobs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.jobs (id, start, "end", state, state_time, registered, gpus_per_host, hosts, ranks, parallelism, topology_version, attrs) FROM stdin;
llama-small	2026-11-29 07:00:00	\N	running	2026-11-29 08:14:00	2026-11-30 13:06:58.462238	8	["node0000", "node0001", "node0002", "node0003", "node0004", "node0005", "node0006", "node0007"]	null	{"dp": 8, "tp": 8}	1	null
\.


--
-- Data for Name: schema_info; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.schema_info (version) FROM stdin;
1
\.


--
-- Data for Name: tokens; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.tokens (id, name, role, host_pattern, secret_sha256, created, revoked) FROM stdin;
501da42b97be	r1-reader	reader	\N	74851a88ad2099a4a30b55ead94b5672b6007bb383c955646f9b592536a4cee7	2026-11-30 13:06:58.753346	\N
\.


--
-- Data for Name: topologies; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.topologies (version, created, body, components, links, hosts, gpus) FROM stdin;
1	2026-11-30 13:06:58.433077	\\x7801ad5dc992e53692fc973c27258224b8d40fcc752e731a93b5719d4e9bea5499aa24f5984cff3e11c847d2092040e025ea542411cb7338027070c9bf5ee65ffff5edd7f7f5fdc7f7972ffffdd7cbdbf2f2e5e5eb3a6ec5f7b2f8ad7c797df9f17fdf563af7fdcfb71ff33fe9f89fbf7efff1f2e5fdf7af5f5f5fc61f3f7e23bbbf5e7ebcadbf3d0ca9c9f7df5fbe94af2fbf8d6f5fe93f7ffffd6afb5519fc2a8fdf2a83dfcae3b7cee0b7f6f86d32f86d3c7e7506bfdae3b7cde0b7f5f8ed32f8ed4ebfdfbfbdbdaf4599ca5e63f6e2b84925abe026959b829b542a0a6e529927b849259ae0269557829b541ad96ede7f5dd692fe9d6c34c56eaf792f70fda87ca6d69d9cd99bfc3c7ffb1dfcd01139fd289d3e377e07c0bc271cbcfff151b3218dfd543097976ff31bd57206e24ba9bf94e54f250c8ae307eebe20c9fd54bcfbf6d63d0c9b74f7ddad7b184ee9ee7bd13d41b87eff1390ff38110d8c62607ca87ff801cc131dd79cb3ec18d04e743c841d03ce898e27c9f1ff5c46181d85d17d7b5fd67f9b750925b0f35b19e7b462597f7b1b69b1f2a25acdc4fff8470e7fffddac88fee33fffaba8fab55edbad2ec66aac0bbd2d4b3135c35c6c755ff6ab5eea6da87dc8bebfcd40043a0ae7b9ac7fbccdbce2fad7d77feb7fb0e5fbfa834ed299b7890f31fd817bf3f5e5ed1ba75efea478b0fec4ec70d65ec7b825a0803eb1b0a94bdc6afc88eb858dbd036c6a1d57b52c5331eba62cf45cab626caabae854a5a6659dfab91b04d820cf44d8d81260e34380ad9a6cd8d40536585a226c30386261ab2e71eb106cec1d60dbc6a66da77928d6b223b64dd55a8cfd3015edb4347a18f9acc436c8331136b604d8f81060ab1dd8aa0b6cb07246d860e8c7c2565fe2ea25c036f60eb00d5a0f845a4ff41a5a625bd914bd5e9a6259fab6adbb7aae974d601be499081b5b026c7c08b0e9d5665b7d810d8401c2062bb458d89a4bdc21c436f60eb04dba6abb79d2b468ee75a1f5d61763dd57453d96a52ea7b62d370936c8331136b604d8f810601b1cb63517d840f7206cb0228d854d5fe28e8fb8dedac6de01b676d0ddd6e9ad68a6a52af4da7554dbdaa9d0d5dccfdbd0eb515502db20cf44d8d81260e343806d9c6db6e90b6c20eb10365881c7c2d65ee24e21b6b17780adefc6ae5bcba9507d35149a8a59310d54eadabe19d6792c75354a5302e499081b5b026c7c08b04d0edbda0b6ca05a1136501cb1b07597b84b886dec1d605375d5f4d5d614d33a31c7869116209b2a1a550ddbdab55af7adc036c8331136b604d8f810605b1cb67517d840943f608339dd2baef8fa8db85211e20add38e2ca3880447ce2eac6c12e167065f7d05bf403ae420f5d2178a2b8523fefee21c9fd54bc7b495c9dee71a5909cbd24ae4ef738a326bbe795b94f79aa9f897f51e24ac25d1057bb63c0fc235234e282b8da1d03da898e0571b53b069c131d0be24afd4cd50ca8edab6d1774d3c5554fa8426d5bea4e4d1dc9023dd0924d4f7a2d864df7c5d4d734c30e6bb3cccaad6d44b55b7175c9f3f3e28a3b5112570636a04f2c6c09e26ab8c2d60d655d0fdd449ab4ee08bb6e2b06b56d85eeab7e5b26026dd5026c90a76f4a08c0c697604ae043a21d295056cd5ffce2ea84cd15570636181cb1b0c58b2bc55c06b675cd3ad7c350156a189642d77d570c152d7797baedc6b1eaba699260833c1361634b808d0f0136bfb8e2461f6c73c595810d867e2c6cf1e24a71d7026ccbba8c75ad8863dda4780142ebb689d8562b358ce3d0b6aaec04b6419e89b0b125c0c687009b5f5c9db0b9e2cac006a22516b67871456bfe0b6c654d63b1edd782f63b68906a5517a4a8e6629e662a6f5bdf36b5472598da067926c2f68cb83a6173c595810d444b2c6cf1e24a71d702db46b556f3b0eaa2da2a5aeece24ae7ab5b645a3a772d483ea6aedd9c934b0419e89b03d23ae4ed85c71656003d1120b5bbcb852dcd3005b43eabde3eda26e2215af3bda6feb877529aa9104fe32ac25953b6190429e89b03d23ae4ed85c71656003d1120b5bbcb852dcd300dbd20d03eda94dc536d12e9bee9b911620c35aac5d5f8f73bdd65a5c80409e89b03d23ae4ed85c71c5d71ef7ebbde28aafdf88ab2a425ca11b475c19073c713c12f189ab1b07bbd48115e87e8afc5ec515bac2894114575592b812dd4be2ea74cfa60f0cd2b397c4d5e91e6754495c89d94be2aa8a1657926b415ced8e81188254911c0be26a770c68273a16c4d5ee18704e742c88ab2a425c5d404816578acb31d4b6b9efca6a6e06dace9d694aa868cfa8af485c55dd3456cbb03475b7b8530251ed565c5df2fcbcb862ac2571656003faf8a6844b3a0fd8e2c595e2720cb04d63d7aee5402bdd6d994925cc74c36fab9aa2a39db76950eb32cf9e5b300636c8d337255cf2bcc2c696b0dce54358eefac5d5099b2bae0c6c1cef518a62614b105796946fabbe1cfbad2c6ad2f2856e485cf53d2dde868616748bae26dafa15d8067926c2c696001b1f026c7e7175c2e68a2b031b0cfd58d812c49525e5cba9e9e6b2a2f5edda8fc436a579dd46e2aa1cb669aebaa6f4a904c336c8331136b604d8f81060f38b2b6ef431485d71656003d1120b5bbcb8aa2c29bfa87e5957da0a5fc68e6adb50cdc5384c742f41d59ae4d6dc749d344821cf44d89e1157276caeb832b0816889852d5e5c555c48a0b6ad15dd44aee85e5f375359d3b4d42dfa96eeffd1a30cb55aea75691a8f26356c833c13617b465c9db0b9e2cac006a22516b6787155712101d8fa6edb2ad5d16c30d00ea5de48cad32d3e556c7dbfb58b520d914ea86d9067226ccf88ab1336575c19d840b4c4c2162fae2a0e0fb0957d354e1bc1b6d68a606b2a22da3477c54ac2b4997aadc7c1b3df66d8067926c2f68cb83a6173c5155f0b892bbe7e23aeea0871856e1c71651cc0e2c227ae6e1cec5a24465ca12b9c1844715527892bd1bd24ae4ef7b85290d48fe85e1257a77b36bdd36ea27b495cd5d1e24a722d88abdd311043902a9263415ced8e01ed44c782b8da1d03ce898e0571554788ab0b08c9e2aab2f6db485aa9b15dd6a2252155e8b61e8a716a9762a92a5daa92a6d9b171a704a2daadb8bae47955093c7861ddc687b06e53dec702396f495c19d8803ebe29e1924eb2b8aaacfdb66d9836dac91d8b8a16b6049b6a8a91b6d8f83eccdae8959e9e193d37fc0c6c90a76f4ab8e479858d2d01363e04d8fce2ea84cd15570636181cb1b0c58babca92f275bbf44dabe6a229f989234dcf554ed3d8146d35acd5368d33ddd812d8067926c2c696001b1f026c7e7175c2e68a2b031b775340935e7af1c1b67871555952be5ae99e81eaeb42e98e60a3fb54c5a41569d2a5eb9ba62de7769805d820cf44d8d81260e34380cd2fae4ed85c716560e30689b025882b4bcacfe3acfbba998a6a6a681b6435b7feda8ef6919a7a55f438a55e3d0f6a99410a7926c2c696001b1f026cfec702b9d1476d73c595810d444bec204d105796946f2bd5f7ad564547b75f0a5dd2ce5b4ff7f88a729b54df74b493d4795482810df24c84ed197175c2e68a2b031b889658d8e2c5556d49f96dd9d434d49a1e74e6e7db86a62f069a078a796db65e95e3d48fd220853c13617b465c9db0b9e2cac006a22516b6787155f3b405e26aecc7ae2a1baa68cb48b5ad9b6b82ada90bdaa5ac667a1c7ad9b4e7b140c336c83311b667c4d5099b2baef85a485cf1f51b71d544882b74e3882be30016173e7175e320455ca12bac70a2b86a92c495e85e1257a77b5c2948e24a742f89abd33dcea8c9ee2571d5448b2b2973415ced8e8118341dd10388c4c8ebad48c9b120ae76c78076a263415ced8e01e744c782b86a22c4d505846471455bdc97da56b5aaa23761e8758eb1a6a7da2a7a8ea11f27ba0f33e985b628e97ebd4f2510d56ec5d525cfab4a78465cf1ec2b892b031bd0c737255cd2491657f42ad005b6ae577c2b61a55b302b69d285d6bc742b815e4ea8eb5997d548d3a967bfcdc00679faa6844b9e57d8d812d66d7c08eb36bfb83a6173c595810d06472c6cf1e2aae65f0333e9509763470fd9174ad1b243cff4be5a3fd36b446ae94a826ca6db809e99d4c0067926c2c696001b1f026c7e7175c2e68a2b031b0cfd58d8e2c555cde101b69eee58cde5dcd09dab955442df5424e53bde1e27dcc66e59bb7575c595810df24c848d2d01363e04d8fce2ea84cd15570636e643405c5dc8ff18a4f1e2aab6a4fcb0d5dbb80cf47c5b5f526d1bdab1e8e9992dba593aaf6a6cf458d39e8967914240419e89b0b125c0c687009b5f5c9db0b9e2cac0c60d12618b1757352f35816daa1fe916554bcfeef60bddf05be8eecb4837628a89b0a341da2ff494aa001be499081b5b026c7c08b0f9dfb9e2461f53822bae0c6c205a62076982b8b2a4bc9e7545af43d263f55dc9b0d5f4f2103f6aafe6795cfaa51dd5e8b92b6f0629e49908db33e2ea84cd15570636102db1b025882b4bcad36e644f22b42be69e5f4ea05bcaf4803d91af5334bfd6fd4a3b49526d833c1361634b601b1f02dbfcef5c9db0b9e28aaf85c4155fbf11573a425ca11ba76e1907b0b8f089ab1b0729e20a5d2178a2b8d249e24a742f89abd33dae1424f523ba97c4d5e91e67d464f792b8d2d1e24aca5c1057bb63200631dd27ae24c782b8da1d03da898e0571b53b069c131d0be24a4788ab0b08c9e2aab1f6db9a6a5aab915fb26a16be05d3d36381348bd2c6d1d02df40efda667cf362551ed565c5df2bcaa8467c4154f2392b832b0017d7c53c2259d6471d5b0775c80346a9acb712c6adea1d4253de4366ef4c1b47e6e96612eb59a3bcfbbf20636c8d337255cf2bcc2c6963025f0214c097e7175c2e68a2b031b0c8e58d8e2c5153d3f7481adea067a568b3627277ae68396bb3dddf09b69dda6e67569d77aac97c9739fd4c0067926c2c696001b1f026c7e7175c2e68a2b031b0cfd58d8e2c555c3de816d23bd12bf9154206d30d263472ded80d0ed655dd49ba2c766e885b5a61adde5ae810df24c848d2d01363e04d8fce2ea84cd15570636102db1b0c58bab86bd036c6b3b6ca4a668e368309ab4df78cf6828a6526f6d3fd01d98cd23ae0c6c9067226c6c09b0f121c0e61757276caeb832b071510888ab4bcd78d4b67871d5b039c0b66df46473dbf6055535bebd5cd30e4845776496b65be90dbf7aa3ef1c096c833c1361634b808d0f0136bfb83a6173c595818d1b24c2162fae1af60eb0b56a6de8718fb5984b7af243d33b5634a7d2b3bb0dcda0e54a34ec3a6990429e89b0b125c0c687009bff8316dce8632675c595810d444bec208d17570d7b07d8ea86d47a439f4f29f92d527a5a861e9d696972e897a95c1a7aac77e93cfb6d6690429e89b0b125c0c687009b5f5c9db0b9e28aaf85c4155fbf11576d84b842378eb8320e6071e11357370e52c415ba42f04471d526892bd1bd24ae4ef7b85290d48fe85e1257a77b9c5193dd4be2aa8d165752e682b8da1d033188e93e71253916c4d5ee18d04e742c88abdd31e09ce85810576d84b8ba80902eaeacfdb6aa59d5d4f0378eaa8d3e44c6dfbe9b367a9768192a7a01aba7f549e9598010d56ec5d525cfab4a78465c710194c495810de8e39b122ee9a48b2b6bbf6da31b568a6442318d1b2d40a6891e6ba8eaba687962a02db7b1a7b7b43cf58f60833c7d53c225cf2b6c6c0953021fc294e01757276caeb832b0c1e088852d5e5cd19bef979974a6878a34ddf52b7833976ebc74f4807d4dd8f573dbd32625ade8268f26356c833c1361634b808d0f0136bfb83a6173c595810d867e2c6cf1e24a73d7c20284bea4482fc4f3bbf25b4d9a74a647dbfa9a6f342f635bea7e2aebcdb3dc35b0419e89b0b125c0c687009b5f5c9db0b9e2cac006a22516b67871a5b96b01b6beabe9d1dda52daa6aa50f5acc24ae6858d6f4153c7aca729a47fac485e713030636c83311b667c4d5099b2bae0c6c205a62618b17579abb1660ababb6a5075157fefa07dd5e1ee81b2a43472fad756d47b7e43b35d35396426d833c13617b465c9db0b9e2cac0c6b53420ae2ea5f63125c48b2bcd3d0db0955d4f9f4ca1cf5894255534ddacb41752d3cdd2897794e835e6853ef229c0067926c2c6963048f91006a95f5c9db0b9e2cac0c60d12618b17579a7b1a60a307e8e9297a7afca32e37ba173fb7f4d99e725ee935bfa1a5ed8f856eca4b5302e499081b5b026c7c08b0f9c51537fa5880b8e20a32f17ed082afdf88ab2e425ca11b6771611cc0e2c227ae6e1ca4882b7485e089e2aa4b1257a27b495c9dee71a520a91fd1bd24ae4ef738a326bb97c455172daea4cc0571b53b066210d37de24a722c88abdd31a09de8581057bb63c039d1b120aeba0871750121595cd103cc97da36a9bae7473de8d3a7741f46d774f76518e8035b75bb6e63bf0ecde05b8010d56ec5d525cfab4a78465cb12894c495810de8e35b805cd24916579acd614a58db72d5f47dfba22a577e3cab9ee91303f419fb6d1e15ddb9aa277ac2de9d490d6c90a76f4ab8e479858d2d614ae0439812fce2ea84cd15570636181cb1b025882b4bcad30b7e8a3e4dbc165ba948ca2f0bb38d1ed49a07d5a8aea437e57d4f1c19d820cf44d8d81260e34380cd2fae4ed85c71656083a11f0b5b82b8b2a47cdbacf4953b7a08b5a12d705a8074fc29765af89624102afaa8053d75e4f9c480810df24c848d2d01363e04d8fce2ea84cd15570636102db1b0c58babd692f26d39d0b7d8e96d2153d174490f1b9126250047fad6a7d2f4b247ef7931d2c0067926c2f68cb83a6173c595810d444b2c6cf1e2aae54202b58d5e25a5c74f4bda606b261aa415bd4134ad1d7d99813e39b0341b6d8eb41e956060833c13617b465c9db0b9e2cac006a22516b67871d5722101d83ada629b147fee7fee0836bae5420f33a8a52099aa8666a9e81b8212db20cf44d8d81206291fc220f58bab1336575c19d8780a0a88abcb0cf59849e3c555cb8504605b7bfa8b1c0dcd9ff4e76268687633ddf09be8cd6f45b795fbb26d26fa12af3093429e89b0b125c0c687009b5f5c9db091b8fae5f5e5ebdbfbff7efca5bf913ed87bf9437f139d307f11ebf297d3dee81120fafb7da1d6b03688680d5362446b9809225a43018c680de33ea235d03da235f4b2af3543168fb7d5fa066fabf50dde56eb1bbcadd637785bad6ff0b65adfe06db5bec19b4188c7db6acda11e95c5d79756eb1bbcadd637785bad6ff0b65adfe06db5bec1db6a7d8337ffac78bcadd637785bad39b140ef58adf930bef50dde96ef1bbcadd637785bad6ff0e644e3f1b65adfe06db5bec1db6a7d83b7d59a0f03bd63b5bec1db6a7d83b7d5fa066f0e1d8fb7d5fa066fabf50dde56eb1bbcadd637785badf930d03b56eb1bbcadd63778b3b378bcadd637785bad6ff0b65adfe06db5bec1db6a7d83b7d59a0f03bd63b5bec19b2fc7e36db5bec1db6a7d83b7d5fa066fabf50dde56eb1bbcadd637785badf9d0ed9de34f49d13d05de0660c88f73b4b6a7ed643efd30e413c762fc68269b423f88a6dcc613153a25d5147ac86f4aa2f6d9df4a8229d1d45138076e0f5f814ef125eabd93c3a28a703c6e4491e13f76a155beaad7eab57e6d7e31379658471d29840240e7bdff110aa05fdbd7eeb54f740f1d1c763fbc2afa09ea555589118007e108aa7e55cdabd2afaa7d559d3f8a40d3dbc1419d9c687a10c6b17bf80a13c6b57adcca8254c370dc10460cc0171eb98503040923bacf4618314256c270ba9eba0620f98b137572a2e94118c7eee12b4c18d72a3361c40080c5270823bae70b517cbcab306284ac8461674f1226d1f4208c63478481df047b0d3863b85699092306c84318d17d36c28811f842142563a6a45d301e7dc305e5fb9ff02bc40a93687a10c6b123c2f897b84752b4c470ad3213460c908730a27b803a5cc0ee2a8c18212b6176c57bf44d3c61124d0fc238764418bfca399222c2b85699092306c84318d17d36c28811b2126697ec47df7c100662881526d1f4208c634784f10bdd2329228c6b95993062803c8411dd67238c18013a335cc362a6a47dcfe1e89b78c2249a1e8471ec8830377b1d4418d72a3361c400790823bacf461831422ec21c7f441b16bdfbdf1306adeaab302153c05734e5369ea8805daa2980e23725ce591b47d1bf95089d687a0c0ec7eee14b5484e6cf1eba56f906473800745eb818495b0861f7d0c161f781f55a3802f0201ce1a69a9a28024db97b1e1de8e71a7572a2e94118c7eee12b4c18d72a3361c4007c214a50050923bacf4618314256c270ba9eba0620898449343d08e3d811610035770bc130dbb5ca4c18310060111ea041c288eee1a787dddf5518314256c2b0b3270993687a10c6b123c2c06f1208e35a65268c18200f6144f7d9082346e00b512532664ab2362af6350cfc0ab1c2249a1e8471ec88307c2e3c25b95699092306c84318d13d40fdb90a2346c84a186ba322853089a607611c3b220c9f0b13c6b5ca4c1831401ec288eeb311468c909530d646c54e188821569844d383308e1d1186cf8509e35a65268c18200f6144f7d908234680ce0cd7b09829c9daa848214ca2e94118c78e08c3e7c28471ad3213460c908730a2fb6c841123e4224cb5bf8a0d8bdefdcfacdfc8ea9029e0eb2b4ec694db78a20276a9a6008adfd4dd738afead44686b17e8cef4181c8eddc3973838cc5f8375adf20d8e7000e8bc7031921461d83d7470d87d40118623000fc2116eaaa98922d0f476705027279a1e8471ec1ebec28471ad3213460cc0171eb985f10e1246749f8d306284ac84e1743d750d40f21727eae444d383308eddc3579830ae5566c28801008b4f104674cf17a2f8785761c4085909c3ce9e244ca2e94118c78e0803bfc9dd7332a5d0b5ca4c1831401ec288eeb311468cc017a228193325591b15fb42047e855861124d0fc2387644183e17ae30ae5566c28801f21046740f50870bd85d85112364258cb55191429844d383308e1d1186cf8509e35a65268c18200f6144f7d9082346c84a186ba362270cc4102b4ca2e94118c78e08c3e7c28471ad3213460c908730a2fb6c8411234067866b58cc94646d54a41026d1f4208c634784e17361c2b85699092306c84318d17d36c288117211a6f6ec39d5fe8fc2d9efd6854c015f5f7132a6dc0696da7b54c02ed51440f19bba7b4e7bd49b2d04f3e7a0ad5da03bd3637038763438209ebbc0377f24dbb5ca3738c201a0f3c2c548da4208bb870e0ebb0facd7c2118007e10837d5d44411680a1de8e71a7572a2e94118c7eee14baca6fe4433be8c190e908730eeaf7e103e1b61c4085909c3e97aea1a80241226d1f4208c63478401d4840ae35a65ae306200c0223c40831546740f3f3decfeaec28811b212869d3d499844d383308e1d11067e934018d72a3361c400790823bacf461831025f7894ef302563a6246ba3625f88c0af102b4ca2e94118c78e08c3e7c253926b95993062803c8411dd03d4e1eebcab306284ac84b1362a520893687a10c6b123c2f0b930615cabcc841103e4218ce83e1b61c4085909636d54ec848118628549343d08e3d81161f85c9830ae5566c28801f21046749f8d306204e8cc700d8b9992ac8d8a14c2249a1e8471ec88307c2e4c18d72a3361c400790823bacf461831422ec2349e3da7266ecf29640af8fa8a9331e536b0d4dea30276a9a6008adfd4dd73daa3de6c2134fbf7f83d094ba6c7e0b0768f0e5fe2e068f6bf52708996710b211c003a2f5c8c244518760f1d1c761f58af8523000fc2116eaaa98922d054eaf5c70bcda693134d0fc23876544da1535c45e84f343761dcb41ee51a720be31d248ce83e1b61c4085909c3e95e062ed7a2ef7f0248fee2449d9c687a10c6b17bf80a5718d72adff46b182906002c3e4118d13d5f78fcf4b0fbbb0a2346c84a1876f62461124d0fc238764418f84d428571ad3213460c908730a2fb6c841123f085284ac64c49d646c5be86815f21569844d383308e1d1186cf852b8c6b95993062803c8411dd03d49fab306284ac84b1362a520893687a10c6b123c2f0b930615cabcc841103e4218ce83e1b61c4085909636d54ec848118628549343d08e3d81161f85c9830ae5566c28801f21046749f8d306204e8cc700d8b9992ac8d8a14c2249a1e8471ec88307c2e4c18d72a3361c400790823bacf461831422ec268cf9e938edb730a9902bebee2644cb90d2cb5f7a8805daa2980e23775f79cf6a8375b08dab3e774677a0c0e6bcfe9f0250e0eedd97322ab7c83231c003a2f5c8ca42d84b07be8e0b0fb80220c47001e8423dc54531345a0690c61124d0fc23876544da1535c45e84f343761dcb41e8c84dcc278070923bacf4618314256c270ba9eba0620f98b137572a2e94118c7eee12b5c615cabcc15460c00587c8230a27bbef0f8e961f77715468c909530ecec49c2249a1e8471ec8830f09b840ae35a65268c18200f6144f7d9082346e00b51948c9992ac8d8a7d2102bf42ac3089a607611c3b220c9f0b5718d72a3361c400790823ba07a83f5761c4085909636d54a41026d1f4208c634784e17361c2b85699092306c84318d17d36c28811b212c6daa8d8090331c40a93687a10c6b123c2f0b930615cabcc841103e4218ce83e1b61c408d099e11a163325591b15298449343d08e3d81161f85c9830ae5566c28801f21046749f8d3062845c84693d7b4e6ddc9e53c814f0f5152763ca6d60a9bd4705ec524d0114bfa9bbe7b447bdd942683d7b4e77a6c7e0b0f69c0e5fe2e0683d7b4e64956f70840340e7858b91b48510760f1d1c761f5084e108c08370849b6a6aa208348d214ca2e94118c78eaa29748aab08fd89e6268c9bd68391905b18ef206144f7d9082346c84a184ed753d700247f71a24e4e343d08e3d83d7c852b8c6b95b9c28801008b4f104674cf171e3f3decfeaec28811b212869d3d499844d383308e1d11067e9350615cabcc841103e4218ce83e1b61c4087c218a92315392b551b12f44e057881526d1f4208c634784e173e10ae35a65268c18200f6144f700f5e72a8c18212b61ac8d8a14c2249a1e8471ec88307c2e4c18d72a3361c400790823bacf4618314256c2581b153b6120865861124d0fc2387644183e17268c6b95993062803c8411dd67238c18013a335cc362a6246ba322853089a607611c3b220c9f0b13c6b5ca4c1831401ec288eeb311468c908b309d67cfa98bdb730a9902bebee2644cb90d2cb5f7a8805daa2980e23775f79cf6a8375b089d67cfe9cef4181cd69ed3e14b1c1c9d67cf89acf20d8e7000e8bc703192b610c2eea183c3ee038a301c0178108e70534d4d1481a6318449343d08e3d85135854e7115a13fd1dc8471d37a3012720be31d248ce83e1b61c4085909c3e97aea1a80e42f4ed4c989a607611cbb87af708571ad325718310060f109c288eef9c2e3a787dddf5518314256c2b0b3270993687a10c6b123c2c06f122a8c6b95993062803c8411dd67238c18812f445132664ab2362af68508fc0ab1c2249a1e8471ec88307c2e5c615cabcc841103e4218ce81ea0fe5c85112364258cb55191429844d383308e1d1186cf8509e35a65268c18200f6144f7d9082346c84a186ba362270cc4102b4ca2e94118c78e08c3e7c28471ad3213460c908730a2fb6c8411234067866b58cc94646d54a41026d1f4208c634784e17361c2b85699092306c84318d17d36c288119e27cc2f7fff3f6c674965	232	544	8	64
\.


--
-- Name: events_arrival; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.events_arrival', 67, true);


--
-- Name: engine_state engine_state_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.engine_state
    ADD CONSTRAINT engine_state_pkey PRIMARY KEY (name);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);


--
-- Name: incidents incidents_number_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.incidents
    ADD CONSTRAINT incidents_number_key UNIQUE (number);


--
-- Name: incidents incidents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.incidents
    ADD CONSTRAINT incidents_pkey PRIMARY KEY (id);


--
-- Name: jobs jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);


--
-- Name: tokens tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (id);


--
-- Name: topologies topologies_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.topologies
    ADD CONSTRAINT topologies_pkey PRIMARY KEY (version);


--
-- Name: ix_events_host_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_events_host_time ON public.events USING btree (host, "time");


--
-- Name: ix_events_job_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_events_job_time ON public.events USING btree (job, "time");


--
-- Name: ix_events_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_events_seq ON public.events USING btree (seq);


--
-- Name: ix_events_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_events_time ON public.events USING btree ("time");


--
-- Name: ix_incident_events_incident_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_incident_events_incident_id ON public.incident_events USING btree (incident_id);


--
-- PostgreSQL database dump complete
--

\unrestrict saRJ0krUF2Twz9EwgT0rSEPcw1zTdC9LsDLq24nOyRq4bjoEiJhwwLDFOCx1NfC

