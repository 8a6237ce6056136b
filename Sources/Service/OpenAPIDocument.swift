/// The API's OpenAPI 3.1 document, served at `/openapi.json`; docs/openapi.json is the same
/// text (a test compares them). Edit both together.
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "sfubot serve",
    "version": "1",
    "description": "Recordings and playbacks of Janus VideoRoom calls (with ECall's frame encryption) as jobs. Every /v1 route takes `Authorization: Bearer <token>`; /healthz, /readyz, /metrics and /openapi.json take none. Refusals are `{\"error\": \"…\"}`. Jobs are confined: recording paths lie below the service's --output-root, media and key files below its --media-root, and a job may name only the Janus servers the service allows."
  },
  "servers": [
    {
      "url": "http://127.0.0.1:8480"
    }
  ],
  "tags": [
    {
      "name": "recordings"
    },
    {
      "name": "playbacks"
    },
    {
      "name": "operations"
    }
  ],
  "paths": {
    "/healthz": {
      "get": {
        "operationId": "health",
        "summary": "The process is alive",
        "tags": [
          "operations"
        ],
        "responses": {
          "200": {
            "description": "Alive.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Health"
                }
              }
            }
          }
        }
      }
    },
    "/readyz": {
      "get": {
        "operationId": "ready",
        "summary": "Whether the service takes jobs: below --max-jobs, and Janus (the service's --janus) answers (a session created and destroyed, at most every 2 s)",
        "tags": [
          "operations"
        ],
        "responses": {
          "200": {
            "description": "Janus answers.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Readiness"
                }
              }
            }
          },
          "503": {
            "description": "Janus does not answer (`not ready`, `error` says why), or the service runs --max-jobs jobs (`full`).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Readiness"
                }
              }
            }
          }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "summary": "Prometheus metrics (text exposition format 0.0.4)",
        "tags": [
          "operations"
        ],
        "responses": {
          "200": {
            "description": "The metrics.",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "openapi",
        "summary": "This document",
        "tags": [
          "operations"
        ],
        "responses": {
          "200": {
            "description": "The OpenAPI 3.1 document of the API.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          }
        }
      }
    },
    "/v1/recordings": {
      "post": {
        "operationId": "startRecording",
        "summary": "Start a recording",
        "tags": [
          "recordings"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/RecordingRequest"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The recording started.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/Timeout"
          },
          "409": {
            "description": "The folder is in use by a running recording, lies inside or around one, or already holds files; or the mix file exists (the message names the field and, for a folder in use, the job).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "429": {
            "$ref": "#/components/responses/Full"
          },
          "503": {
            "$ref": "#/components/responses/ShuttingDown"
          }
        }
      },
      "get": {
        "operationId": "listRecordings",
        "summary": "Every recording of this process and of its state folder, oldest first, a page at a time",
        "tags": [
          "recordings"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "responses": {
          "200": {
            "description": "The recordings.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/JobStatus"
                  }
                }
              }
            },
            "headers": {
              "Next-After": {
                "required": false,
                "description": "Present when more jobs follow: pass it as `after` for the next page.",
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "description": "`limit` is not 1 to 1000, or `after` names no job of this kind (the message names the parameter).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          }
        },
        "parameters": [
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "Jobs per page, 1 to 1000 (default 100).",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000
            }
          },
          {
            "name": "after",
            "in": "query",
            "required": false,
            "description": "The id of the last job of the page before (its Next-After header); absent: the first page.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "description": "Finished jobs are kept for --keep-finished (default 7 days), then forgotten (their recordings stay)."
      }
    },
    "/v1/recordings/{id}": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "operationId": "getRecording",
        "summary": "One recording",
        "tags": [
          "recordings"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "responses": {
          "200": {
            "description": "The recording.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobStatus"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          }
        }
      },
      "delete": {
        "operationId": "stopRecording",
        "summary": "Stop a recording (its files are finished); answers its final state, also for a job that had ended",
        "tags": [
          "recordings"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "responses": {
          "200": {
            "description": "The recording, stopped.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobStatus"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          }
        }
      }
    },
    "/v1/playbacks": {
      "post": {
        "operationId": "startPlayback",
        "summary": "Start a playback",
        "tags": [
          "playbacks"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/PlaybackRequest"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The playback started.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/Timeout"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "429": {
            "$ref": "#/components/responses/Full"
          },
          "503": {
            "$ref": "#/components/responses/ShuttingDown"
          }
        }
      },
      "get": {
        "operationId": "listPlaybacks",
        "summary": "Every playback of this process and of its state folder, oldest first, a page at a time",
        "tags": [
          "playbacks"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "responses": {
          "200": {
            "description": "The playbacks.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/JobStatus"
                  }
                }
              }
            },
            "headers": {
              "Next-After": {
                "required": false,
                "description": "Present when more jobs follow: pass it as `after` for the next page.",
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "description": "`limit` is not 1 to 1000, or `after` names no job of this kind (the message names the parameter).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          }
        },
        "parameters": [
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "Jobs per page, 1 to 1000 (default 100).",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000
            }
          },
          {
            "name": "after",
            "in": "query",
            "required": false,
            "description": "The id of the last job of the page before (its Next-After header); absent: the first page.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "description": "Finished jobs are kept for --keep-finished (default 7 days), then forgotten (their recordings stay)."
      }
    },
    "/v1/playbacks/{id}": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "operationId": "getPlayback",
        "summary": "One playback",
        "tags": [
          "playbacks"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "responses": {
          "200": {
            "description": "The playback.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobStatus"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          }
        }
      },
      "delete": {
        "operationId": "stopPlayback",
        "summary": "Stop a playback (its files are finished); answers its final state, also for a job that had ended",
        "tags": [
          "playbacks"
        ],
        "security": [
          {
            "bearer": []
          }
        ],
        "responses": {
          "200": {
            "description": "The playback, stopped.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobStatus"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "The token of the service's --token-file."
      }
    },
    "schemas": {
      "RecordingRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "room",
          "key",
          "out"
        ],
        "properties": {
          "room": {
            "type": "integer",
            "minimum": 1,
            "maximum": 9223372036854775807,
            "description": "The VideoRoom room id."
          },
          "janus": {
            "type": [
              "string",
              "null"
            ],
            "pattern": "^wss?://",
            "description": "The Janus WebSocket URL: ws:// or wss://, a host name or IPv4 address (no user:password@, no IPv6 literal), a port of 1 to 65535 if any, at most 1024 bytes; it must be one the service allows (--janus, --janus-allow), else 400 before any connection. Absent or null: the service's --janus.",
            "maxLength": 1024
          },
          "key": {
            "$ref": "#/components/schemas/Key"
          },
          "out": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1024,
            "description": "The folder for the recording's files and manifest.json, below the service's --output-root: relative to it, or absolute and inside it; no `..` component, no symlink followed (403 otherwise), no NUL byte. New or empty (created 0700 if missing; 409 if it holds files), and neither the folder of another running recording nor inside or around one (409). Answers show it absolute."
          },
          "mix": {
            "type": [
              "string",
              "null"
            ],
            "minLength": 1,
            "maxLength": 1024,
            "description": "A new file into which every publisher's audio is mixed, below --output-root as `out` is; an existing file is never overwritten (409)."
          },
          "display": {
            "type": [
              "string",
              "null"
            ],
            "minLength": 1,
            "maxLength": 256,
            "description": "The display name (ECall's \"<userId>:<Name>\"), 1 to 256 bytes of UTF-8."
          },
          "durationSeconds": {
            "type": [
              "number",
              "null"
            ],
            "exclusiveMinimum": 0,
            "maximum": 31536000,
            "description": "Stop after this many seconds (at most 365 days); absent or null: until stopped."
          }
        }
      },
      "PlaybackRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "room",
          "key",
          "file"
        ],
        "properties": {
          "room": {
            "type": "integer",
            "minimum": 1,
            "maximum": 9223372036854775807,
            "description": "The VideoRoom room id."
          },
          "janus": {
            "type": [
              "string",
              "null"
            ],
            "pattern": "^wss?://",
            "description": "The Janus WebSocket URL: ws:// or wss://, a host name or IPv4 address (no user:password@, no IPv6 literal), a port of 1 to 65535 if any, at most 1024 bytes; it must be one the service allows (--janus, --janus-allow), else 400 before any connection. Absent or null: the service's --janus.",
            "maxLength": 1024
          },
          "key": {
            "$ref": "#/components/schemas/Key"
          },
          "file": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1024,
            "description": "The media file to play: a regular file (not a FIFO, device or socket: 400) below the service's --media-root, relative to it or absolute and inside it; no `..`, no symlink followed (403); no NUL byte. Answers show it absolute."
          },
          "display": {
            "type": [
              "string",
              "null"
            ],
            "minLength": 1,
            "maxLength": 256,
            "description": "The display name (ECall's \"<userId>:<Name>\"), 1 to 256 bytes of UTF-8."
          },
          "loop": {
            "type": [
              "boolean",
              "null"
            ],
            "description": "Play the file again and again (default false)."
          },
          "durationSeconds": {
            "type": [
              "number",
              "null"
            ],
            "exclusiveMinimum": 0,
            "maximum": 31536000,
            "description": "Stop after this many seconds (at most 365 days); absent or null: until stopped."
          }
        }
      },
      "Key": {
        "description": "The call key: 64 hex characters, a key file below the service's --media-root (32 raw bytes or 64 hex characters), or explicitly none (media without ECall's frame encryption). Never shown in an answer.",
        "oneOf": [
          {
            "title": "hex",
            "type": "object",
            "additionalProperties": false,
            "required": [
              "hex"
            ],
            "properties": {
              "hex": {
                "type": "string",
                "pattern": "^[0-9a-fA-F]{64}$"
              }
            }
          },
          {
            "title": "file",
            "type": "object",
            "additionalProperties": false,
            "required": [
              "file"
            ],
            "properties": {
              "file": {
                "type": "string",
                "description": "A regular file below the service's --media-root (as a playback's `file`); no NUL byte.",
                "minLength": 1,
                "maxLength": 1024
              }
            }
          },
          {
            "title": "none",
            "type": "object",
            "additionalProperties": false,
            "required": [
              "none"
            ],
            "properties": {
              "none": {
                "const": true
              }
            }
          }
        ]
      },
      "JobStatus": {
        "type": "object",
        "additionalProperties": false,
        "description": "A job as the API shows it. Fields without a value are absent (never null).",
        "required": [
          "id",
          "kind",
          "state",
          "room",
          "e2ee",
          "created",
          "reconnects",
          "resumes"
        ],
        "properties": {
          "id": {
            "type": "string"
          },
          "kind": {
            "type": "string",
            "enum": [
              "recording",
              "playback"
            ]
          },
          "state": {
            "type": "string",
            "enum": [
              "starting",
              "running",
              "reconnecting",
              "stopping",
              "done",
              "failed"
            ]
          },
          "room": {
            "type": "integer"
          },
          "janus": {
            "type": "string",
            "description": "As asked; absent: the service's --janus."
          },
          "e2ee": {
            "type": "boolean",
            "description": "Whether the job has a call key."
          },
          "out": {
            "type": "string"
          },
          "mix": {
            "type": "string"
          },
          "file": {
            "type": "string"
          },
          "display": {
            "type": "string"
          },
          "loop": {
            "type": "boolean",
            "description": "Playbacks only."
          },
          "durationSeconds": {
            "type": "number"
          },
          "created": {
            "type": "string",
            "format": "date-time"
          },
          "ended": {
            "type": "string",
            "format": "date-time"
          },
          "feeds": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Feed"
            },
            "description": "Recordings only: every track so far with its frame counters."
          },
          "files": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Recordings only: the files written so far."
          },
          "frames": {
            "$ref": "#/components/schemas/Frames"
          },
          "reconnects": {
            "type": "integer",
            "minimum": 0,
            "description": "Times the job lost Janus or its media path and came back."
          },
          "resumes": {
            "type": "integer",
            "minimum": 0,
            "description": "Times the service took the job up again after a restart."
          },
          "lastError": {
            "type": "string"
          },
          "lastErrorTime": {
            "type": "string",
            "format": "date-time"
          }
        }
      },
      "Feed": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "feedId",
          "display",
          "kind",
          "codec",
          "file",
          "live",
          "framesReceived",
          "framesOpened",
          "framesDropped",
          "dropped"
        ],
        "properties": {
          "feedId": {
            "type": "integer"
          },
          "display": {
            "type": "string"
          },
          "kind": {
            "type": "string"
          },
          "codec": {
            "type": "string"
          },
          "file": {
            "type": "string"
          },
          "live": {
            "type": "boolean"
          },
          "framesReceived": {
            "type": "integer",
            "minimum": 0
          },
          "framesOpened": {
            "type": "integer",
            "minimum": 0
          },
          "framesDropped": {
            "type": "integer",
            "minimum": 0
          },
          "dropped": {
            "type": "object",
            "additionalProperties": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Drops by reason (no_marker, too_short, no_key_opens, malformed)."
          },
          "error": {
            "type": "string"
          }
        }
      },
      "Frames": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "audioSealed",
          "videoSealed",
          "sealFailed"
        ],
        "description": "Playbacks only: frames sealed (or sent as is without a key) and frames that could not be sealed.",
        "properties": {
          "audioSealed": {
            "type": "integer",
            "minimum": 0
          },
          "videoSealed": {
            "type": "integer",
            "minimum": 0
          },
          "sealFailed": {
            "type": "integer",
            "minimum": 0
          }
        }
      },
      "Error": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "error"
        ],
        "properties": {
          "error": {
            "type": "string"
          }
        }
      },
      "Health": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "status"
        ],
        "properties": {
          "status": {
            "const": "ok"
          }
        }
      },
      "Readiness": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "status",
          "janus"
        ],
        "properties": {
          "status": {
            "enum": [
              "ready",
              "not ready",
              "full"
            ]
          },
          "janus": {
            "type": "string"
          },
          "error": {
            "type": "string"
          }
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "The body is not JSON, not an object, or a field is wrong; the message names the field (e.g. \"key.hex: …\").",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "No `Authorization: Bearer <token>` header, or not the service's token.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "WWW-Authenticate": {
            "required": true,
            "schema": {
              "type": "string",
              "const": "Bearer"
            }
          }
        }
      },
      "NotFound": {
        "description": "No job of this kind with this id.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "TooLarge": {
        "description": "The body is larger than the service takes (64 KiB).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "ShuttingDown": {
        "description": "The service is shutting down and takes no new job.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Forbidden": {
        "description": "A path leads outside the service's root for it (absolute outside it, a `..` component, a symlink, no permission); the message names the field.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Full": {
        "description": "The service runs --max-jobs jobs; try again after Retry-After seconds.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Retry-After": {
            "required": true,
            "schema": {
              "type": "string",
              "pattern": "^[0-9]+$"
            }
          }
        }
      },
      "Timeout": {
        "description": "The body did not arrive within 10 s of the request's head.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      }
    }
  }
}
"""#
}
